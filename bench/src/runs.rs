//! The bench's runs: what the command line asks for, which workloads run,
//! and which BENCHMARKS.md sections their tables go to.

use crate::{
    Args, cpu, edge_report, history, machine, many_agents, peer, plan, real_agent, report, rows,
    server, workspaces,
};
use anyhow::{Result, bail};

/// Runs the benchmark; `Ok(false)` when some workload failed.
pub(crate) fn run(args: Args) -> Result<bool> {
    if let Some(agents) = args.many_agents {
        many_agents::run(&many_agents::ManyAgents {
            bin: args.stasis_bin.clone(),
            agents,
            max_open_objects: args.max_open_objects,
            tmp_dir: args.tmp_dir.clone(),
        })?;
        return Ok(true);
    }
    if args.only_workspaces {
        return workspace_run(&args);
    }
    if args.only_history {
        return history_run(&args);
    }
    let options = plan_options(&args)?;
    let load_before = machine::load_average();
    if args.only_real_agent {
        return real_agent_run(&args, &options, load_before);
    }
    if args.only_snapshots {
        return snapshot_run(&args, &options, load_before);
    }
    full_run(&args, &options, load_before)
}

/// What the command line asks the plan to run.
fn plan_options(args: &Args) -> Result<plan::Options> {
    let options = plan::Options {
        quick: args.quick,
        stasis_bin: args.stasis_bin.clone(),
        url: args.url.clone().map(|url| (url, args.token.clone())),
        peer: !args.no_peer && !args.only_snapshots,
        peer_dir: peer::resolve_dir(args.peer_dir.clone()),
        node: args.node.clone(),
        tmp_dir: args.tmp_dir.clone(),
        edge: edge_target(args)?,
        only_snapshots: args.only_snapshots,
    };
    if options.url.is_none() && !options.stasis_bin.is_file() {
        bail!(
            "{} does not exist: build it (`cargo build --release -p stasis-host`) or pass --url",
            options.stasis_bin.display()
        );
    }
    Ok(options)
}

/// `--only-real-agent`: the sidecar and real-agent workloads alone.
fn real_agent_run(args: &Args, options: &plan::Options, load_before: String) -> Result<bool> {
    let rows = real_agent_rows(args, options)?;
    if let Some(path) = &args.record {
        let edge = options.edge.as_ref().map(|edge| edge.url.as_str());
        let section = real_agent::section(&run_info(args, load_before), &rows, edge);
        report::record(path, real_agent::MARKS, &section)?;
    }
    Ok(!rows.iter().any(report::Row::failed))
}

/// Every workload: printed, and recorded into every section with `--record`.
fn full_run(args: &Args, options: &plan::Options, load_before: String) -> Result<bool> {
    let results = plan::run(options)?;
    let rows = rows::rows(&results);
    println!("{}", report::table(&rows));
    let snapshot_rows = rows::snapshot_rows(&results);
    println!("{}", report::table(&snapshot_rows));
    let edge_rows = options.edge.as_ref().map(|_| edge_report::rows(&results));
    if let Some(edge_rows) = &edge_rows {
        println!("{}", edge_report::table(edge_rows));
        println!("{}", edge_report::explanations(edge_rows));
    }
    let agent_rows = real_agent_rows(args, options)?;

    if let Some(path) = &args.record {
        let info = run_info(args, load_before);
        report::record(path, report::EVENT_LOG, &report::section(&info, &rows))?;
        report::record(
            path,
            report::SNAPSHOTS,
            &report::snapshots_section(&info, &snapshot_rows),
        )?;
        if let (Some(edge_rows), Some(edge)) = (&edge_rows, &options.edge) {
            let section = edge_report::section(&info, &edge_info(args, edge), edge_rows);
            report::record(path, edge_report::EDGE, &section)?;
        }
        let edge_url = options.edge.as_ref().map(|edge| edge.url.as_str());
        let section = real_agent::section(&info, &agent_rows, edge_url);
        report::record(path, real_agent::MARKS, &section)?;
        eprintln!("recorded in {}", path.display());
    }
    let edge_failed = edge_rows.iter().flatten().any(edge_report::EdgeRow::failed);
    let failed = (rows.iter().chain(&snapshot_rows).chain(&agent_rows)).any(report::Row::failed);
    Ok(!failed && !edge_failed)
}

/// What the edge section says ran each side.
fn edge_info(args: &Args, edge: &plan::EdgeTarget) -> edge_report::EdgeInfo {
    edge_report::EdgeInfo {
        host: match &args.url {
            Some(url) => format!("stasis at {url} (given by `--url`)"),
            None => format!(
                "`{} serve --durability fsync` (`--durability os` for its one row), \
                 spawned by the bench on 127.0.0.1",
                args.stasis_bin.display()
            ),
        },
        edge: format!(
            "`wrangler dev --local` at {}{}",
            edge.url,
            edge.pgid.map(cpu::describe_group).unwrap_or_default()
        ),
    }
}

/// `--only-snapshots`: the snapshot workloads alone, printed and recorded
/// into their section only.
fn snapshot_run(args: &Args, options: &plan::Options, load_before: String) -> Result<bool> {
    let results = plan::run(options)?;
    let rows = rows::snapshot_rows(&results);
    println!("{}", report::table(&rows));
    if let Some(path) = &args.record {
        let info = run_info(args, load_before);
        report::record(
            path,
            report::SNAPSHOTS,
            &report::snapshots_section(&info, &rows),
        )?;
        eprintln!("recorded in {}", path.display());
    }
    Ok(!rows.iter().any(report::Row::failed))
}

/// `--only-workspaces`: the workspace workload alone, printed and recorded into its section.
fn workspace_run(args: &Args) -> Result<bool> {
    if !args.stasis_bin.is_file() {
        bail!(
            "{} does not exist: build it (`cargo build --release -p stasis-host`)",
            args.stasis_bin.display()
        );
    }
    let load_before = machine::load_average();
    let lines = workspaces::run(&workspaces::Options {
        bin: args.stasis_bin.clone(),
        quick: args.quick,
        repo: args.workspace_repo.clone(),
        tmp_dir: args.tmp_dir.clone(),
    })?;
    println!("{}", workspaces::table(&lines));
    if let Some(path) = &args.record {
        let section = workspaces::section(&run_info(args, load_before), &lines);
        report::record(path, workspaces::MARKS, &section)?;
        eprintln!("recorded in {}", path.display());
    }
    Ok(true)
}

/// `--only-history`: history, restore and fork on a spawned host and, with
/// `--edge-url`, the edge; printed and recorded into their section.
fn history_run(args: &Args) -> Result<bool> {
    if !args.stasis_bin.is_file() {
        bail!(
            "{} does not exist: build it (`cargo build --release -p stasis-host`)",
            args.stasis_bin.display()
        );
    }
    let edge = edge_target(args)?.map(|edge| (edge.url, edge.token));
    let load_before = machine::load_average();
    let lines = history::run(&history::Options {
        bin: args.stasis_bin.clone(),
        quick: args.quick,
        tmp_dir: args.tmp_dir.clone(),
        edge: edge.clone(),
    })?;
    println!("{}", history::table(&lines));
    if let Some(path) = &args.record {
        let edge_url = edge.as_ref().map(|(url, _)| url.as_str());
        let section = history::section(&run_info(args, load_before), edge_url, &lines);
        report::record(path, history::MARKS, &section)?;
        eprintln!("recorded in {}", path.display());
    }
    if history::missed(&lines) {
        eprintln!("history: some aims were missed (see the table); the run itself succeeded");
    }
    Ok(true)
}

/// The sidecar and real-agent rows (`real_agent`), printed.
fn real_agent_rows(args: &Args, options: &plan::Options) -> Result<Vec<report::Row>> {
    let rows = real_agent::run(&real_agent::Options {
        quick: args.quick,
        stasis_bin: args.stasis_bin.clone(),
        url: (args.url.clone()).map(|url| (url, args.token.clone().unwrap_or_default())),
        edge: (options.edge.as_ref()).map(|edge| (edge.url.clone(), edge.token.clone())),
        tmp_dir: args.tmp_dir.clone(),
    })?;
    println!("{}", report::table(&rows));
    Ok(rows)
}

/// What every recorded section says about the run.
fn run_info(args: &Args, load_before: String) -> report::RunInfo {
    report::RunInfo {
        machine: machine::Machine::detect(),
        load: (load_before, machine::load_average()),
        load_before_build: std::env::var("STASIS_BENCH_LOAD_BEFORE_BUILD")
            .ok()
            .filter(|load| !load.trim().is_empty()),
        command: command_line(),
        target: match &args.url {
            Some(url) => format!("stasis at {url} (given by `--url`)"),
            None => format!(
                "`{} serve` spawned by the bench on 127.0.0.1",
                args.stasis_bin.display()
            ),
        },
    }
}

/// The edge to run, from `--edge-url` and its secret or token.
fn edge_target(args: &Args) -> Result<Option<plan::EdgeTarget>> {
    let Some(url) = args.edge_url.clone().filter(|_| !args.no_edge) else {
        return Ok(None);
    };
    let token = match (&args.edge_secret, &args.edge_token) {
        (Some(secret), _) => {
            if secret.trim().len() < 16 {
                bail!("--edge-secret must be at least 16 characters, as the worker requires");
            }
            server::admin_token(secret.trim())?
        }
        (None, Some(token)) => token.clone(),
        (None, None) => bail!("--edge-url needs --edge-secret or --edge-token"),
    };
    Ok(Some(plan::EdgeTarget {
        url,
        token,
        pgid: args.edge_pgid,
    }))
}

/// The command as typed, as markdown, with the wrapper script named when it set
/// `STASIS_BENCH_VIA` (and never a token or secret).
pub(crate) fn command_line() -> String {
    const SECRETS: [&str; 3] = ["--token", "--edge-token", "--edge-secret"];
    let mut words: Vec<String> = Vec::new();
    let mut hide_next = false;
    for arg in std::env::args() {
        if hide_next {
            words.push("<hidden>".to_owned());
            hide_next = false;
        } else if SECRETS.contains(&arg.as_str()) {
            hide_next = true;
            words.push(arg);
        } else if let Some((flag, _)) = arg.split_once('=')
            && SECRETS.contains(&flag)
        {
            words.push(format!("{flag}=<hidden>"));
        } else {
            words.push(arg);
        }
    }
    let direct = words.join(" ");
    match std::env::var("STASIS_BENCH_VIA") {
        Ok(via) if !via.is_empty() => format!("`{via}` (runs `{direct}`)"),
        _ => format!("`{direct}`"),
    }
}
