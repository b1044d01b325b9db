//! The trees the workspace workload saves: a synthetic one of many small files of
//! pseudo-random bytes, and a copy of this repository's tracked files; the `tar` baselines of
//! the same tree; and the one-file edit.

use anyhow::{Context, Result, bail};
use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

/// What a tree built here holds.
#[derive(Debug, Clone)]
pub struct Built {
    /// Its folder.
    pub root: PathBuf,
    /// Regular files.
    pub files: u64,
    /// Bytes in them.
    pub bytes: u64,
    /// The file a one-file edit rewrites.
    pub edit: PathBuf,
}

/// `files` files of pseudo-random bytes (`seed`), `bytes` in all (sizes vary from half to
/// one and a half times the mean), 100 to a folder.
pub fn synthetic(root: &Path, files: u64, bytes: u64, seed: u64) -> Result<Built> {
    let mean = bytes / files.max(1);
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut written = 0;
    let mut buf = Vec::new();
    for i in 0..files {
        let dir = root.join(format!("d{:04}", i / 100));
        if i % 100 == 0 {
            fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let size = mean / 2 + next(&mut rng) % mean.max(1);
        fill(&mut buf, size, &mut rng);
        let path = dir.join(format!("f{i:06}.bin"));
        fs::write(&path, &buf).with_context(|| format!("writing {}", path.display()))?;
        written += size;
    }
    Ok(Built {
        root: root.to_owned(),
        files,
        bytes: written,
        edit: root
            .join(format!("d{:04}", files / 2 / 100))
            .join(format!("f{:06}.bin", files / 2)),
    })
}

/// The files `git ls-files` lists in `repo` (tracked files: no `target/`, no `node_modules/`,
/// no `.git`), copied into `root`.
pub fn checkout_copy(repo: &Path, root: &Path) -> Result<Built> {
    let listed = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["ls-files", "-z"])
        .output()
        .context("running git ls-files")?;
    if !listed.status.success() {
        bail!("git ls-files in {} failed", repo.display());
    }
    let (mut files, mut bytes) = (0, 0);
    let mut regular = Vec::new();
    for name in listed.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name).into_owned();
        let from = repo.join(&name);
        let to = root.join(&name);
        let Ok(meta) = fs::symlink_metadata(&from) else {
            continue; // deleted in the work tree
        };
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)?;
        }
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&from)?, &to)?;
        } else if meta.is_file() {
            fs::copy(&from, &to).with_context(|| format!("copying {}", from.display()))?;
            files += 1;
            bytes += meta.len();
            regular.push(to);
        }
    }
    let edit = regular
        .get(regular.len() / 2)
        .cloned()
        .context("the checkout has no files")?;
    Ok(Built {
        root: root.to_owned(),
        files,
        bytes,
        edit,
    })
}

/// Rewrites the tree's edit file: its first bytes changed, the same length.
pub fn edit_one_file(built: &Built, round: u64) -> Result<()> {
    let mut bytes = fs::read(&built.edit)?;
    let stamp = format!("edited {round} ");
    for (i, b) in stamp.bytes().enumerate() {
        if let Some(slot) = bytes.get_mut(i) {
            *slot = b;
        }
    }
    if bytes.len() < stamp.len() {
        bytes.extend_from_slice(stamp.as_bytes());
    }
    let mut file = fs::File::create(&built.edit)?;
    file.write_all(&bytes)?;
    Ok(())
}

/// `tar cf ARCHIVE -C root .`, timed.
pub fn tar_c(root: &Path, archive: &Path) -> Result<Duration> {
    let started = Instant::now();
    let status = Command::new("tar")
        .arg("cf")
        .arg(archive)
        .arg("-C")
        .arg(root)
        .arg(".")
        .status()?;
    if !status.success() {
        bail!("tar c of {} failed", root.display());
    }
    Ok(started.elapsed())
}

/// `tar xf ARCHIVE -C into` (a new folder), timed.
pub fn tar_x(archive: &Path, into: &Path) -> Result<Duration> {
    fs::create_dir_all(into)?;
    let started = Instant::now();
    let status = Command::new("tar")
        .arg("xf")
        .arg(archive)
        .arg("-C")
        .arg(into)
        .status()?;
    if !status.success() {
        bail!("tar x of {} failed", archive.display());
    }
    Ok(started.elapsed())
}

fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fill(buf: &mut Vec<u8>, len: u64, rng: &mut u64) {
    buf.clear();
    let len = usize::try_from(len).unwrap_or(0);
    while buf.len() < len {
        buf.extend_from_slice(&next(rng).to_le_bytes());
    }
    buf.truncate(len);
}
