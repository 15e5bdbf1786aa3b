//! The declared `rust-version` of every published crate is one the project has a reason to
//! believe (issue 46): it is at least the `rust-version` of every crate it builds with (its
//! normal and build dependencies, every feature on, on this host), and at least what its
//! edition needs. Clippy's `incompatible_msrv` lint (on in CI, `-D warnings`) checks the other
//! half: no standard-library API newer than the declared version. What neither checks is a
//! language feature newer than it; `.ci/run` builds with the declared toolchain when one is
//! installed.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// `"1.87"` or `"1.85.0"` as `(1, 87, 0)`; a missing version as `(0, 0, 0)`.
fn version(v: Option<&str>) -> (u64, u64, u64) {
    let mut parts = v
        .unwrap_or("0")
        .split('.')
        .map(|p| p.parse::<u64>().unwrap_or(0));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

/// The least Rust version an edition builds with.
fn edition_needs(edition: &str) -> (u64, u64, u64) {
    match edition {
        "2015" => (1, 0, 0),
        "2018" => (1, 31, 0),
        "2021" => (1, 56, 0),
        "2024" => (1, 85, 0),
        other => panic!("an edition this test does not know: {other}"),
    }
}

fn host() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().expect("rustc -vV");
    let text = String::from_utf8(out.stdout).expect("rustc -vV is UTF-8");
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_owned()
}

/// Each published workspace crate's problems with its `rust-version`, from `cargo metadata`.
fn problems(metadata: &Value) -> Vec<String> {
    let packages: BTreeMap<&str, &Value> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p))
        .collect();
    let nodes: BTreeMap<&str, &Value> = metadata["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let mut out = Vec::new();
    for id in metadata["workspace_members"].as_array().unwrap() {
        let id = id.as_str().unwrap();
        let package = packages[id];
        let name = package["name"].as_str().unwrap();
        // `publish = false` reads as an empty list of registries.
        if package["publish"].as_array().is_some_and(|r| r.is_empty()) {
            continue;
        }
        let declared = package["rust_version"].as_str();
        if declared.is_none() {
            out.push(format!("{name}: no rust-version"));
            continue;
        }
        let edition = package["edition"].as_str().unwrap();
        if version(declared) < edition_needs(edition) {
            out.push(format!(
                "{name}: rust-version {} is older than edition {edition} allows",
                declared.unwrap()
            ));
        }
        // Every crate it builds with: normal and build dependencies, transitively.
        let mut seen = BTreeSet::new();
        let mut stack = vec![id];
        while let Some(at) = stack.pop() {
            for dep in nodes[at]["deps"].as_array().unwrap() {
                let builds_with = dep["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["kind"].is_null() || k["kind"] == "build");
                let dep_id = dep["pkg"].as_str().unwrap();
                if builds_with && seen.insert(dep_id) {
                    stack.push(dep_id);
                }
            }
        }
        for dep in seen {
            let dep = packages[dep];
            let needs = dep["rust_version"].as_str();
            if version(needs) > version(declared) {
                out.push(format!(
                    "{name}: rust-version {} but it builds with {} {}, which needs {}",
                    declared.unwrap(),
                    dep["name"].as_str().unwrap(),
                    dep["version"].as_str().unwrap(),
                    needs.unwrap()
                ));
            }
        }
    }
    out
}

#[test]
fn every_published_crate_declares_a_rust_version_its_dependencies_allow() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--all-features"])
        .args(["--filter-platform", &host()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let published = metadata["workspace_members"].as_array().unwrap().len();
    assert!(published >= 3, "the workspace has its crates ({published})");
    let p = problems(&metadata);
    assert!(p.is_empty(), "rust-version too low:\n{}", p.join("\n"));
}

/// The check fails where it should: a crate declaring less than a dependency needs, none at
/// all, or less than its edition allows.
#[test]
fn the_check_catches_a_rust_version_too_low() {
    let metadata = |declared: Value, edition: &str, dep_needs: &str| {
        serde_json::json!({
            "workspace_members": ["a"],
            "packages": [
                {"id": "a", "name": "a", "version": "0.1.0", "publish": null,
                 "rust_version": declared, "edition": edition},
                {"id": "d", "name": "d", "version": "1.0.0", "publish": null,
                 "rust_version": dep_needs, "edition": "2021"},
                {"id": "t", "name": "t", "version": "1.0.0", "publish": null,
                 "rust_version": "9.99", "edition": "2021"},
            ],
            "resolve": {"nodes": [
                {"id": "a", "deps": [
                    {"pkg": "d", "dep_kinds": [{"kind": null, "target": null}]},
                    // A dev-dependency does not count.
                    {"pkg": "t", "dep_kinds": [{"kind": "dev", "target": null}]},
                ]},
                {"id": "d", "deps": []},
                {"id": "t", "deps": []},
            ]}
        })
    };
    assert!(problems(&metadata("1.87".into(), "2021", "1.85.0")).is_empty());
    assert_eq!(
        problems(&metadata("1.84".into(), "2021", "1.85.0")).len(),
        1
    );
    assert_eq!(problems(&metadata(Value::Null, "2021", "1.0")).len(), 1);
    assert_eq!(problems(&metadata("1.80".into(), "2024", "1.0")).len(), 1);
}
