//! Every example a reader sees runs (issue 28): the code blocks of `README.md`, the guide
//! (`src/guide.rs` and its topics, `src/guide/*.md`) and the READMEs of `hotlimit-tower` and `hotlimit-redis` follow the rule
//! in CONTRIBUTING.md, so that each Rust example is compiled (and, unless it needs a server,
//! run) as a doctest by `bash .ci/test`:
//!
//! - each README is included in its crate's `lib.rs` under `#[cfg(doctest)]`, and the guide
//!   is a public module, so rustdoc sees their Rust blocks;
//! - every fenced block in a README names its language; a Rust block has no attribute, except
//!   `no_run` in a crate README for a block that needs a server (it serves, or connects);
//!   `ignore` and `compile_fail` are never allowed, and the guide has no `no_run`;
//! - a block in another language (`sh`, `text`, ...) holds no Rust.
//!
//! The checker's own tests feed it each kind of violation and expect it to fail.

use std::path::Path;

/// Where a document's blocks end up.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// The root README: every Rust block runs.
    RootReadme,
    /// A crate's README: Rust blocks that need a server may be `no_run`.
    CrateReadme,
    /// Rustdoc comments (the guide): an untagged fence is Rust, as rustdoc reads it.
    DocComment,
}

/// Languages that are not Rust and that rustdoc does not test.
const OTHER_LANGUAGES: [&str; 10] = [
    "sh", "bash", "console", "text", "toml", "json", "yaml", "lua", "diff", "svg",
];

/// What a block may contain for `no_run` to be allowed: it serves, or it connects to a server.
const NEEDS_A_SERVER: [&str; 5] = [
    "serve(",
    ".serve(",
    "TcpListener::bind",
    "Client::open",
    "connection_manager(",
];

/// The start of a line that is Rust code, and fragments no shell line or formula has.
const RUST_LINE_STARTS: [&str; 12] = [
    "use ",
    "fn ",
    "let ",
    "impl ",
    "struct ",
    "enum ",
    "pub ",
    "mod ",
    "async fn ",
    "#[",
    "match ",
    "trait ",
];
const RUST_FRAGMENTS: [&str; 3] = ["::<", ".unwrap()", "?;"];

/// One fenced block: its info string, its lines, and the line its fence opens on (1-based).
#[derive(Debug)]
struct Block {
    info: String,
    body: Vec<String>,
    line: usize,
}

/// The fenced blocks of `text` (``` or ~~~ fences), in order.
fn blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut open: Option<(String, Block)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        let fence = ["```", "~~~"].into_iter().find(|f| line.starts_with(f));
        match (&mut open, fence) {
            (None, Some(f)) => {
                let info = line
                    .trim_start_matches(f.chars().next().unwrap())
                    .trim()
                    .to_owned();
                let block = Block {
                    info,
                    body: Vec::new(),
                    line: i + 1,
                };
                open = Some((f.to_owned(), block));
            }
            (Some((f, _)), Some(g))
                if *f == g && line.trim_end().trim_start_matches(&g[..1]).is_empty() =>
            {
                out.push(open.take().unwrap().1);
            }
            (Some((_, block)), _) => block.body.push(raw.to_owned()),
            (None, None) => {}
        }
    }
    match open {
        Some((_, block)) => Err(format!("line {}: a fence that never closes", block.line)),
        None => Ok(out),
    }
}

/// The text of a file's `//!` doc comment, one line per comment line.
fn doc_comment(source: &str) -> String {
    source
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rule's violations in `text`, a document of `kind` named `name`.
fn violations(name: &str, text: &str, kind: Kind) -> Vec<String> {
    let blocks = match blocks(text) {
        Ok(b) => b,
        Err(e) => return vec![format!("{name}: {e}")],
    };
    let mut out = Vec::new();
    for b in &blocks {
        let at = format!("{name}:{}", b.line);
        let tokens: Vec<&str> = b
            .info
            .split([',', ' ', '\t'])
            .filter(|t| !t.is_empty())
            .collect();
        if tokens.is_empty() && kind != Kind::DocComment {
            out.push(format!(
                "{at}: a fence without a language (write `rust`, `sh`, `text`, ...)"
            ));
            continue;
        }
        if let Some(lang) = tokens.first().filter(|t| OTHER_LANGUAGES.contains(t)) {
            if let Some(l) = b.body.iter().find(|l| looks_like_rust(l)) {
                out.push(format!(
                    "{at}: a `{lang}` block holds Rust (`{}`): make it a `rust` block",
                    l.trim()
                ));
            }
            continue;
        }
        for attr in tokens.iter().filter(|t| **t != "rust") {
            match *attr {
                "no_run" if kind == Kind::CrateReadme => {
                    let body = b.body.join("\n");
                    if !NEEDS_A_SERVER.iter().any(|s| body.contains(s)) {
                        out.push(format!(
                            "{at}: `no_run` on a block that needs no server: let it run"
                        ));
                    }
                }
                a if a.starts_with("edition") => {}
                a => out.push(format!(
                    "{at}: `{a}`: this example would not run as a doctest"
                )),
            }
        }
    }
    out
}

fn looks_like_rust(line: &str) -> bool {
    let l = line.trim_start();
    // A doctest's hidden line (`# use ...`) is Rust too.
    let l = l.strip_prefix("# ").unwrap_or(l);
    RUST_LINE_STARTS.iter().any(|s| l.starts_with(s))
        || RUST_FRAGMENTS.iter().any(|f| l.contains(f))
}

/// The violation, if any, in how a crate's `lib.rs` includes its README as a doctest: the
/// include must be there, directly under `#[cfg(doctest)]` (doc comments may sit between).
fn include_violation(crate_name: &str, lib_rs: &str) -> Option<String> {
    let include = r#"#[doc = include_str!("../README.md")]"#;
    let Some(at) = lib_rs.find(include) else {
        return Some(format!(
            "{crate_name}: src/lib.rs does not include README.md as a doctest"
        ));
    };
    let above = lib_rs[..at]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("///"));
    (above != Some("#[cfg(doctest)]"))
        .then(|| format!("{crate_name}: the README include is not directly under #[cfg(doctest)]"))
}

/// Every violation in the workspace's documents.
fn workspace_violations() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read =
        |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    let mut out = Vec::new();
    for (name, dir, kind) in [
        ("hotlimit", ".", Kind::RootReadme),
        ("hotlimit-tower", "hotlimit-tower", Kind::CrateReadme),
        ("hotlimit-redis", "hotlimit-redis", Kind::CrateReadme),
    ] {
        out.extend(include_violation(name, &read(&format!("{dir}/src/lib.rs"))));
        let readme = format!("{dir}/README.md");
        out.extend(violations(&readme, &read(&readme), kind));
    }
    if !read("src/lib.rs").contains("pub mod guide;") {
        out.push(
            "src/lib.rs: the guide is not a public module (its examples would not run)".into(),
        );
    }
    out.extend(violations(
        "src/guide.rs",
        &doc_comment(&read("src/guide.rs")),
        Kind::DocComment,
    ));
    for (topic, text) in guide_topics() {
        let name = format!("src/guide/{topic}.md");
        let include = format!("#![doc = include_str!(\"guide/{topic}.md\")]");
        if !read("src/guide.rs").contains(&include) {
            out.push(format!(
                "{name}: not included by src/guide.rs (its examples would not run)"
            ));
        }
        out.extend(violations(&name, &text, Kind::DocComment));
    }
    out
}

/// The guide's topics: each `src/guide/<topic>.md`, by name, with its text.
fn guide_topics() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/guide");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let path = e.ok()?.path();
            let topic = path.file_name()?.to_str()?.strip_suffix(".md")?.to_owned();
            Some((topic, std::fs::read_to_string(&path).ok()?))
        })
        .collect();
    out.sort();
    out
}

/// The anchors of `text`'s headings (outside code blocks), as rustdoc and GitHub make them:
/// lowercase letters, digits, `-` and `_` kept, whitespace made `-`, anything else dropped.
fn anchors(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        if l.starts_with("```") || l.starts_with("~~~") {
            in_code = !in_code;
        } else if !in_code && l.starts_with('#') {
            let title = l.trim_start_matches('#').trim();
            let id = title
                .chars()
                .filter_map(|c| match c {
                    c if c.is_alphanumeric() || c == '-' || c == '_' => {
                        Some(c.to_lowercase().next().unwrap())
                    }
                    c if c.is_whitespace() => Some('-'),
                    _ => None,
                })
                .collect();
            out.push(id);
        }
    }
    out
}

/// The README's links into the guide and BENCHMARKS.md name headings that exist, so a
/// renamed section breaks this test, not a reader's link. A guide link names its topic's page
/// (`guide/<topic>/index.html#<heading>`).
#[test]
fn readme_links_name_sections_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let readme = read("README.md");
    let mut targets: Vec<(String, Vec<String>)> = guide_topics()
        .into_iter()
        .map(|(topic, text)| (format!("guide/{topic}/index.html#"), anchors(&text)))
        .collect();
    targets.push(("BENCHMARKS.md#".into(), anchors(&read("BENCHMARKS.md"))));
    let mut checked = 0;
    for (prefix, ids) in &targets {
        for (at, _) in readme.match_indices(prefix.as_str()) {
            let rest = &readme[at + prefix.len()..];
            let id: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            assert!(
                ids.contains(&id),
                "README.md links to {prefix}{id}, which is no heading"
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 5,
        "the README links into the guide and BENCHMARKS.md ({checked} links)"
    );
    assert!(
        !readme.contains("guide/index.html#"),
        "README.md links to a heading of the guide's index: name the topic's page"
    );
}

/// Every intra-doc link into a guide topic's heading (`crate::guide::<topic>#<heading>`, in
/// any source file or guide page) names a heading of that page: rustdoc checks the page, not
/// the heading.
#[test]
fn guide_links_in_the_sources_name_sections_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let topics = guide_topics();
    let mut sources: Vec<(String, String)> = topics
        .iter()
        .map(|(t, text)| (format!("src/guide/{t}.md"), text.clone()))
        .collect();
    let mut dirs = vec![root.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                sources.push((path.display().to_string(), text));
            }
        }
    }
    let mut checked = 0;
    for (name, text) in &sources {
        for (at, _) in text.match_indices("guide::") {
            let rest = &text[at + "guide::".len()..];
            let topic: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let Some(id) = rest[topic.len()..].strip_prefix('#') else {
                continue;
            };
            let id: String = id
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            let page = topics.iter().find(|(t, _)| *t == topic);
            let page = page.unwrap_or_else(|| panic!("{name}: no guide topic `{topic}`"));
            assert!(
                anchors(&page.1).contains(&id),
                "{name} links to guide::{topic}#{id}, which is no heading"
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 20,
        "the sources link into the guide ({checked} links)"
    );
}

#[test]
fn every_example_in_the_readmes_and_the_guide_is_a_doctest() {
    let v = workspace_violations();
    assert!(
        v.is_empty(),
        "code blocks that would not run (rule: CONTRIBUTING.md):\n{}",
        v.join("\n")
    );
}

#[test]
fn the_checker_catches_each_kind_of_violation() {
    let readme = |body: &str| violations("R", body, Kind::RootReadme);
    let crate_readme = |body: &str| violations("R", body, Kind::CrateReadme);
    // Allowed: a plain Rust block, shell and text without Rust, math in a text block.
    assert_eq!(
        readme("```rust\nfn main() {}\n```\n```sh\ncargo test -p a -- --nocapture\n```\n"),
        Vec::<String>::new()
    );
    assert_eq!(
        readme("```text\nS' = max(S, now) + n·I\n$ curl -si http://127.0.0.1:3000/\n```\n"),
        Vec::<String>::new()
    );
    assert_eq!(
        crate_readme("```rust,no_run\nlet l = TcpListener::bind(a);\n```\n"),
        Vec::<String>::new()
    );
    // Rust hidden in a text block, an sh block, behind a doctest's `# `.
    assert_eq!(readme("```text\nuse hotlimit::Gcra;\n```\n").len(), 1);
    assert_eq!(readme("```sh\nlet x = y.unwrap();\n```\n").len(), 1);
    assert_eq!(readme("~~~text\n# fn main() {}\n~~~\n").len(), 1);
    // Examples that would not run.
    assert_eq!(readme("```rust,ignore\nfn main() {}\n```\n").len(), 1);
    assert_eq!(readme("```ignore\nfn main() {}\n```\n").len(), 1);
    assert_eq!(readme("```rust,no_run\nfn main() {}\n```\n").len(), 1);
    assert_eq!(readme("```compile_fail\nfn main() {}\n```\n").len(), 1);
    assert_eq!(
        crate_readme("```rust,no_run\nfn main() {}\n```\n").len(),
        1,
        "no server: must run"
    );
    // A fence without a language in a README; one that never closes.
    assert_eq!(readme("```\nfn main() {}\n```\n").len(), 1);
    assert_eq!(readme("```rust\nfn main() {}\n").len(), 1);
    // In a doc comment an untagged fence is Rust (rustdoc's default) and is fine.
    assert_eq!(
        violations("G", "```\nlet x = 1;\n```\n", Kind::DocComment),
        Vec::<String>::new()
    );
    assert_eq!(
        violations("G", "```text\nlet x = 1;\n```\n", Kind::DocComment).len(),
        1
    );
    // A README that is not included, or not under cfg(doctest).
    let lib_ok =
        "#[cfg(doctest)]\n#[doc = include_str!(\"../README.md\")]\npub struct ReadmeDoctests;";
    assert_eq!(include_violation("c", lib_ok), None);
    let lib_stray =
        "#[cfg(doctest)]\nconst X: u8 = 0;\n#[doc = include_str!(\"../README.md\")]\npub struct R;";
    assert!(include_violation("c", lib_stray).is_some());
    assert!(include_violation("c", "pub struct R;").is_some());
}
