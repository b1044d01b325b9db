//! The tree's module structure, checked: no two sibling modules of a crate
//! use each other (issue 13's "no import circles between modules").
//!
//! A module is a file (`a/b.rs`, or `a/b/mod.rs` for the folder); it uses
//! another when its code (comments and test modules left out) names it
//! through `crate::…` or `super::…`. Two modules *circle* when each uses the
//! other, compared directly under their common parent: `a/b` using `a/c/d`
//! is `a/b` using `a/c`. A child using its parent (or the reverse) is not a
//! circle: a module is where its children's shared items live.

use regex::Regex;
use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// The patterns a module's code is read with.
struct Patterns {
    inline_tests: Regex,
    from_crate: Regex,
    from_super: Regex,
    crate_group: Regex,
    super_group: Regex,
    group_item: Regex,
}

impl Patterns {
    fn new() -> Result<Self, regex::Error> {
        Ok(Self {
            inline_tests: Regex::new(r"#\[cfg\(test\)\]\s*mod tests\s*\{")?,
            from_crate: Regex::new(r"crate::((?:\w+::)*\w+)")?,
            from_super: Regex::new(r"super::((?:\w+::)*\w+)")?,
            crate_group: Regex::new(r"use crate::\{([^;]*)\};")?,
            super_group: Regex::new(r"use super::\{([^;]*)\};")?,
            group_item: Regex::new(r"(?:^|[{,])\s*((?:\w+::)*\w+)")?,
        })
    }
}

/// A module's path inside its crate, e.g. `["snapshot", "saga"]`.
pub type ModulePath = Vec<String>;

/// Two sibling modules that use each other, with one reference each way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    /// The first module and a path it names in the second.
    pub first: (ModulePath, String),
    /// The second module and a path it names in the first.
    pub second: (ModulePath, String),
}

impl std::fmt::Display for Circle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ((a, a_uses), (b, b_uses)) = (&self.first, &self.second);
        write!(
            f,
            "{} <-> {} ({} uses {a_uses}; {} uses {b_uses})",
            a.join("/"),
            b.join("/"),
            a.join("/"),
            b.join("/")
        )
    }
}

/// The circles between the modules of the crate whose source folder is
/// `src`.
pub fn circles(src: &Path) -> std::io::Result<Vec<Circle>> {
    let mut files = Vec::new();
    rust_files(src, &mut files)?;
    let mut modules = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        modules.insert(module_path(src, &file), text);
    }
    let patterns = Patterns::new().map_err(std::io::Error::other)?;
    let known: BTreeSet<&ModulePath> = modules.keys().collect();
    // (user, used) between siblings, with one path the user named.
    let mut uses: BTreeMap<(ModulePath, ModulePath), String> = BTreeMap::new();
    for (module, text) in &modules {
        for named in named_paths(&patterns, module, &product_code(&patterns, text)) {
            let Some(target) = (1..=named.len())
                .rev()
                .map(|n| named[..n].to_vec())
                .find(|prefix| known.contains(prefix) && prefix != module)
            else {
                continue;
            };
            let shared = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if shared < module.len() && shared < target.len() {
                let pair = (module[..=shared].to_vec(), target[..=shared].to_vec());
                uses.entry(pair).or_insert_with(|| named.join("::"));
            }
        }
    }
    Ok(uses
        .iter()
        .filter(|((a, b), _)| a < b)
        .filter_map(|((a, b), a_uses)| {
            let b_uses = uses.get(&(b.clone(), a.clone()))?;
            Some(Circle {
                first: (a.clone(), a_uses.clone()),
                second: (b.clone(), b_uses.clone()),
            })
        })
        .collect())
}

/// Every `.rs` file under `dir` but test modules (`tests.rs`, `tests/`).
fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "tests" {
                rust_files(&path, files)?;
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            files.push(path);
        }
    }
    Ok(())
}

/// `src/a/b.rs` is `a/b`; `src/a/mod.rs` is `a`; `src/lib.rs` the root.
fn module_path(src: &Path, file: &Path) -> ModulePath {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut path: ModulePath = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if path
        .last()
        .is_some_and(|last| ["mod", "lib", "main"].contains(&last.as_str()))
    {
        path.pop();
    }
    path
}

/// The text without comment lines and without an inline test module
/// (which by convention ends the file).
fn product_code(patterns: &Patterns, text: &str) -> String {
    let code: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect();
    let code = code.join("\n");
    match patterns.inline_tests.find(&code) {
        Some(found) => code[..found.start()].to_owned(),
        None => code,
    }
}

/// The module paths `code` (in `module`) names, resolved from the crate
/// root: `crate::a::b`, `use crate::{a, b::c}`, `super::x`, `use super::{x}`.
fn named_paths(patterns: &Patterns, module: &ModulePath, code: &str) -> Vec<ModulePath> {
    let parent: ModulePath = module[..module.len().saturating_sub(1)].to_vec();
    let split = |path: &str| path.split("::").map(str::to_owned).collect::<ModulePath>();
    let mut named = Vec::new();
    let root = Vec::new();
    for (re, base) in [
        (&patterns.from_crate, &root),
        (&patterns.from_super, &parent),
    ] {
        for found in re.captures_iter(code) {
            let mut path = base.clone();
            path.extend(split(&found[1]));
            named.push(path);
        }
    }
    for (re, base) in [
        (&patterns.crate_group, &root),
        (&patterns.super_group, &parent),
    ] {
        for group in re.captures_iter(code) {
            for found in patterns.group_item.captures_iter(&group[1]) {
                let mut path = base.clone();
                path.extend(split(&found[1]));
                named.push(path);
            }
        }
    }
    named
}
