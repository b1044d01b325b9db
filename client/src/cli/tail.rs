//! `tail`: follow an agent's events, one JSON line each.

use super::agent_ref;
use super::args::TailArgs;
use serde_json::Value;
use stasis_client::tail::{self, TailOptions};
use stasis_client::{Client, Error, exit};
use std::io::Write;
use std::ops::ControlFlow;

pub fn tail(client: &Client, args: TailArgs) -> Result<u8, Error> {
    let agent = agent_ref(&args.agent)?;
    let options = TailOptions {
        after: args.after,
        session_id: args.session,
        event_type: args.event_type,
        ..TailOptions::default()
    };
    let mut stdout = std::io::stdout().lock();
    let mut write_error = None;
    tail::tail(client, &agent, &options, &mut |event| {
        // One line per event: re-encode the JSON compactly (data may span lines).
        let line = serde_json::from_str::<Value>(&event.json)
            .map_or_else(|_| event.json.replace('\n', " "), |v| v.to_string());
        match writeln!(stdout, "{line}").and_then(|()| stdout.flush()) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                write_error = Some(e);
                ControlFlow::Break(())
            }
        }
    })?;
    match write_error {
        // A closed pipe (`| head`) is a normal way to stop following.
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(exit::OK),
        Some(e) => Err(Error::io("writing to stdout", e)),
        None => Ok(exit::OK),
    }
}
