//! `cargo xtask public-api [--check]`: the library facade's public API (crate
//! `inferlint`, every feature on), listed one item a line in `docs/public-api.txt`, and
//! refused when a public signature names a type of an inner crate the facade does not
//! export.
//!
//! The listing comes from rustdoc's JSON output (`--output-format json`, unstable: run
//! with `RUSTC_BOOTSTRAP=1` on the stable toolchain, the only use of it here), read for
//! what a harness author can name: each public module, re-export, function, method,
//! struct field, enum variant, trait, constant and type alias, with its signature. A
//! change to the API is then a diff of that file in review, and `--check` (CI) fails
//! when the file is not what the code gives.
//!
//! The leak rule: a type a public signature names must be the facade's own, one it
//! re-exports (`pub use`, anywhere public in it), or a type of a crate outside the
//! workspace (std, serde_json, chrono...). A type of `inferlint_core`, `_engines`,
//! `_live`... that the facade does not re-export cannot be named by its user, and ties
//! the facade to an inner crate's layout.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// The facade crate.
const FACADE: &str = "inferlint";
/// The listing's file, from the repository root.
pub const LISTING: &str = "docs/public-api.txt";
/// Where the nested rustdoc build goes: its own folder, so that it never waits on the
/// build lock of a `cargo test` that runs it.
const TARGET: &str = "target/public-api";

/// Builds the facade's rustdoc JSON and returns it.
pub fn rustdoc_json(root: &Path) -> Result<Value> {
    let target = root.join(TARGET);
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", &target)
        .args([
            "rustdoc",
            "-q",
            "--locked",
            "-p",
            FACADE,
            "--lib",
            "--all-features",
            "--",
            "-Z",
            "unstable-options",
            "--output-format",
            "json",
        ])
        .status()
        .context("cannot run cargo rustdoc")?;
    if !status.success() {
        bail!("cargo rustdoc for the facade's JSON failed ({status})");
    }
    let path = target.join("doc").join(format!("{FACADE}.json"));
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

/// `cargo xtask public-api [--check]`.
pub fn run(root: &Path, check: bool) -> Result<()> {
    let doc = rustdoc_json(root)?;
    let api = Api::of(&doc)?;
    if !api.leaks.is_empty() {
        bail!(
            "the facade's public API names types of inner crates it does not export:\n  {}",
            api.leaks.join("\n  ")
        );
    }
    let path = root.join(LISTING);
    if check {
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != api.listing {
            bail!(
                "{} is not the facade's public API: run `cargo xtask public-api` and review the diff",
                path.display()
            );
        }
        eprintln!("{} is the facade's public API", path.display());
        Ok(())
    } else {
        crate::write(&path, &api.listing)
    }
}

/// The facade's public API: its listing and the leaks found.
#[derive(Debug, Default)]
pub struct Api {
    /// One item a line, sorted, with a header.
    pub listing: String,
    /// Each public signature that names an inner crate's type the facade does not
    /// export: `fn inferlint::x::f names inferlint_core::y::Z`.
    pub leaks: Vec<String>,
}

struct Walk<'a> {
    doc: &'a Value,
    lines: BTreeSet<String>,
    /// Each id a public path names, and that path.
    exported: HashMap<u64, String>,
    /// The facade's own public items, by public path.
    public: Vec<(String, u64)>,
    leaks: BTreeSet<String>,
}

impl Api {
    /// Reads rustdoc's JSON of the facade.
    pub fn of(doc: &Value) -> Result<Api> {
        let root = doc["root"]
            .as_u64()
            .context("rustdoc JSON without a root")?;
        let mut walk = Walk {
            doc,
            lines: BTreeSet::new(),
            exported: HashMap::new(),
            public: Vec::new(),
            leaks: BTreeSet::new(),
        };
        walk.collect(root, FACADE, &mut HashSet::new());
        for (here, id) in std::mem::take(&mut walk.public) {
            walk.render(&here, id);
        }
        let mut listing = format!(
            "# The public API of the `{FACADE}` crate, every feature on: one item a line, from\n\
             # rustdoc's JSON (format {}). Made by `cargo xtask public-api`; CI checks it.\n",
            doc["format_version"]
        );
        for line in &walk.lines {
            listing.push_str(line);
            listing.push('\n');
        }
        Ok(Api {
            listing,
            leaks: walk.leaks.into_iter().collect(),
        })
    }
}

impl<'a> Walk<'a> {
    /// An item of the index, borrowed from the document (not from the walk).
    fn item(&self, id: u64) -> Option<&'a Value> {
        let doc: &'a Value = self.doc;
        doc["index"].get(id.to_string())
    }

    fn public(item: &Value) -> bool {
        item["visibility"] == "public"
    }

    /// Every public path of the facade and the item it names: its public items, in
    /// public modules, and what its public `use`s name (a module of its own re-exported
    /// is walked under the new name, a glob's items as the module's own). Each named id
    /// gets its public path, by which signatures name it.
    fn collect(&mut self, module: u64, path: &str, seen: &mut HashSet<u64>) {
        if !seen.insert(module) {
            return;
        }
        let Some(items) = self
            .item(module)
            .and_then(|m| m["inner"]["module"]["items"].as_array())
        else {
            return;
        };
        for id in items.iter().filter_map(Value::as_u64) {
            let Some(item) = self.item(id) else { continue };
            if !Self::public(item) {
                continue;
            }
            let Some(u) = item["inner"].get("use") else {
                let here = format!("{path}::{}", item["name"].as_str().unwrap_or("_"));
                if item["inner"].get("module").is_some() {
                    self.lines.insert(format!("pub mod {here}"));
                    self.collect(id, &here, seen);
                } else {
                    self.name(id, &here);
                    self.public.push((here, id));
                }
                continue;
            };
            let as_name = u["name"].as_str().unwrap_or("?");
            let here = format!("{path}::{as_name}");
            let Some(target) = u["id"].as_u64() else {
                continue;
            };
            let local = self.item(target);
            match local {
                Some(t) if t["inner"].get("module").is_some() => {
                    if u["is_glob"] == true {
                        self.collect(target, path, seen);
                    } else {
                        self.lines.insert(format!("pub mod {here}"));
                        self.collect(target, &here, seen);
                    }
                }
                Some(_) => {
                    self.name(target, &here);
                    self.public.push((here, target));
                }
                None => {
                    self.name(target, &here);
                    let source = u["source"].as_str().unwrap_or("?");
                    self.lines.insert(if u["is_glob"] == true {
                        format!("pub use {path}::{source}::*")
                    } else {
                        format!("pub use {here} = {source}")
                    });
                }
            }
        }
    }

    /// Records the first (shortest) public path an id is named by.
    fn name(&mut self, id: u64, path: &str) {
        let shorter = self.exported.get(&id).is_none_or(|p| path.len() < p.len());
        if shorter {
            self.exported.insert(id, path.to_owned());
        }
    }

    /// One public item of the facade's own, at its public path.
    fn render(&mut self, here: &str, id: u64) {
        let Some(item) = self.item(id) else { return };
        let name = here.rsplit("::").next().unwrap_or("_").to_owned();
        let inner = &item["inner"];
        if let Some(f) = inner.get("function") {
            let sig = self.function(&name, f, here);
            self.lines.insert(format!("pub {sig} [{here}]"));
        } else if let Some(s) = inner.get("struct") {
            self.structure(here, item, s);
        } else if let Some(e) = inner.get("enum") {
            self.enumeration(here, item, e);
        } else if inner.get("trait").is_some() {
            self.lines.insert(format!("pub trait {here}"));
        } else if let Some(c) = inner.get("constant") {
            let ty = self.ty(&c["type"], here);
            self.lines.insert(format!("pub const {here}: {ty}"));
        } else if let Some(t) = inner.get("type_alias") {
            let ty = self.ty(&t["type"], here);
            self.lines.insert(format!("pub type {here} = {ty}"));
        } else if inner.get("macro").is_some() {
            self.lines.insert(format!("macro {here}!"));
        } else if let Some(kind) = inner.as_object().and_then(|o| o.keys().next()) {
            self.lines.insert(format!("pub {kind} {here}"));
        }
    }

    fn non_exhaustive(item: &Value) -> &'static str {
        let attrs = item["attrs"].as_array().cloned().unwrap_or_default();
        if attrs
            .iter()
            .any(|a| a.to_string().contains("non_exhaustive"))
        {
            "#[non_exhaustive] "
        } else {
            ""
        }
    }

    fn structure(&mut self, here: &str, item: &Value, s: &Value) {
        self.lines
            .insert(format!("{}pub struct {here}", Self::non_exhaustive(item)));
        if let Some(fields) = s["kind"]["plain"]["fields"].as_array() {
            for id in fields.iter().filter_map(Value::as_u64) {
                let Some(field) = self.item(id).filter(|f| Self::public(f)) else {
                    continue;
                };
                let name = field["name"].as_str().unwrap_or("_").to_owned();
                let ty = self.ty(&field["inner"]["struct_field"], here);
                self.lines.insert(format!("pub {here}.{name}: {ty}"));
            }
        }
        self.impls(here, &s["impls"]);
    }

    fn enumeration(&mut self, here: &str, item: &Value, e: &Value) {
        let doc: &'a Value = self.doc;
        self.lines
            .insert(format!("{}pub enum {here}", Self::non_exhaustive(item)));
        if let Some(variants) = e["variants"].as_array() {
            for id in variants.iter().filter_map(Value::as_u64) {
                let Some(v) = self.item(id) else { continue };
                let name = v["name"].as_str().unwrap_or("_").to_owned();
                let kind = &v["inner"]["variant"]["kind"];
                let mut words = format!("{here}::{name}");
                if let Some(fields) = kind["tuple"].as_array() {
                    let tys: Vec<String> = fields
                        .iter()
                        .filter_map(Value::as_u64)
                        .filter_map(|f| doc["index"].get(f.to_string()))
                        .map(|f| self.ty(&f["inner"]["struct_field"], here))
                        .collect();
                    let _ = write!(words, "({})", tys.join(", "));
                } else if let Some(fields) = kind["struct"]["fields"].as_array() {
                    let named: Vec<String> = fields
                        .iter()
                        .filter_map(Value::as_u64)
                        .filter_map(|f| doc["index"].get(f.to_string()))
                        .map(|f| {
                            let ty = self.ty(&f["inner"]["struct_field"], here);
                            format!("{}: {ty}", f["name"].as_str().unwrap_or("_"))
                        })
                        .collect();
                    let _ = write!(words, " {{ {} }}", named.join(", "));
                }
                self.lines.insert(format!("variant {words}"));
            }
        }
        self.impls(here, &e["impls"]);
    }

    /// Inherent methods (public ones, with their signatures) and the traits implemented
    /// (by name; blanket and auto-trait impls left out).
    fn impls(&mut self, here: &str, impls: &Value) {
        for id in impls
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
        {
            let Some(imp) = self.item(id) else { continue };
            let imp = &imp["inner"]["impl"];
            if imp["is_synthetic"] == true || !imp["blanket_impl"].is_null() {
                continue;
            }
            match imp["trait"].as_object() {
                Some(tr) => {
                    let path = tr.get("path").and_then(Value::as_str).unwrap_or("?");
                    let name = path.rsplit("::").next().unwrap_or(path);
                    // What `#[derive(PartialEq)]` adds for the compiler's own use.
                    if name != "StructuralPartialEq" {
                        self.lines.insert(format!("impl {name} for {here}"));
                    }
                }
                None => {
                    for m in imp["items"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_u64)
                    {
                        let Some(method) = self.item(m) else { continue };
                        if !Self::public(method) {
                            continue;
                        }
                        let name = method["name"].as_str().unwrap_or("_");
                        let at = format!("{here}::{name}");
                        if let Some(f) = method["inner"].get("function") {
                            let sig = self.function(name, f, &at);
                            self.lines.insert(format!("pub {sig} [{at}]"));
                        } else if let Some(c) = method["inner"].get("assoc_const") {
                            let ty = self.ty(&c["type"], &at);
                            self.lines.insert(format!("pub const {at}: {ty}"));
                        }
                    }
                }
            }
        }
    }

    fn function(&mut self, name: &str, f: &Value, at: &str) -> String {
        let sig = &f["sig"];
        let inputs: Vec<String> = sig["inputs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|pair| {
                let arg = pair[0].as_str().unwrap_or("_").to_owned();
                let ty = self.ty(&pair[1], at);
                match (arg.as_str(), ty.as_str()) {
                    ("self", "Self") => "self".to_owned(),
                    ("self", "&Self") => "&self".to_owned(),
                    ("self", "&mut Self") => "&mut self".to_owned(),
                    _ => format!("{arg}: {ty}"),
                }
            })
            .collect();
        let generics = self.generics(&f["generics"], at);
        let output = match &sig["output"] {
            Value::Null => String::new(),
            t => format!(" -> {}", self.ty(t, at)),
        };
        let asyncness = if f["header"]["is_async"] == true {
            "async "
        } else {
            ""
        };
        format!(
            "{asyncness}fn {name}{generics}({}){output}",
            inputs.join(", ")
        )
    }

    fn generics(&mut self, g: &Value, at: &str) -> String {
        let params: Vec<String> = g["params"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["kind"]["type"]["is_synthetic"] != true)
            .filter_map(|p| {
                let name = p["name"].as_str()?.to_owned();
                if p["kind"].get("lifetime").is_some() {
                    return Some(name);
                }
                let bounds = self.bounds(&p["kind"]["type"]["bounds"], at);
                Some(if bounds.is_empty() {
                    name
                } else {
                    format!("{name}: {bounds}")
                })
            })
            .collect();
        if params.is_empty() {
            String::new()
        } else {
            format!("<{}>", params.join(", "))
        }
    }

    fn bounds(&mut self, bounds: &Value, at: &str) -> String {
        let words: Vec<String> = bounds
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| {
                if let Some(t) = b.get("trait_bound") {
                    Some(self.path(&t["trait"], at))
                } else {
                    b.get("outlives").and_then(Value::as_str).map(str::to_owned)
                }
            })
            .collect();
        words.join(" + ")
    }

    /// A path (a type or a trait) with its arguments; an inner crate's type the facade
    /// does not export is a leak, recorded against `at`.
    fn path(&mut self, p: &Value, at: &str) -> String {
        let id = p["id"].as_u64();
        let mut name = p["path"].as_str().unwrap_or("?").to_owned();
        if let Some(public) = id.and_then(|id| self.exported.get(&id)) {
            name = public.clone();
        } else if let Some(id) = id {
            if let Some(summary) = self.doc["paths"].get(id.to_string()) {
                let crate_id = summary["crate_id"].as_u64().unwrap_or(0);
                let full: Vec<&str> = summary["path"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if crate_id != 0 {
                    let krate = self.doc["external_crates"][crate_id.to_string()]["name"]
                        .as_str()
                        .unwrap_or("?");
                    if krate.starts_with("inferlint") {
                        self.leaks.insert(format!("{at} names {}", full.join("::")));
                    }
                    if krate.starts_with("inferlint") && !full.is_empty() {
                        name = full.join("::");
                    }
                }
            }
        }
        let angle = &p["args"]["angle_bracketed"];
        let mut args: Vec<String> = angle["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| {
                if let Some(t) = a.get("type") {
                    Some(self.ty(t, at))
                } else {
                    a.get("lifetime").and_then(Value::as_str).map(str::to_owned)
                }
            })
            .collect();
        // Associated types bound in place: `Iterator<Item = RequestRecord>`.
        for c in angle["constraints"].as_array().into_iter().flatten() {
            let bound = c["name"].as_str().unwrap_or("?");
            if let Some(t) = c["binding"]["equality"].get("type") {
                let ty = self.ty(t, at);
                args.push(format!("{bound} = {ty}"));
            }
        }
        if args.is_empty() {
            name
        } else {
            format!("{name}<{}>", args.join(", "))
        }
    }

    fn ty(&mut self, t: &Value, at: &str) -> String {
        if let Some(p) = t.get("resolved_path") {
            return self.path(p, at);
        }
        if let Some(g) = t.get("generic").and_then(Value::as_str) {
            return g.to_owned();
        }
        if let Some(p) = t.get("primitive").and_then(Value::as_str) {
            return p.to_owned();
        }
        if let Some(r) = t.get("borrowed_ref") {
            let lifetime = r["lifetime"]
                .as_str()
                .map(|l| format!("{l} "))
                .unwrap_or_default();
            let m = if r["is_mutable"] == true { "mut " } else { "" };
            return format!("&{lifetime}{m}{}", self.ty(&r["type"], at));
        }
        if let Some(s) = t.get("slice") {
            return format!("[{}]", self.ty(s, at));
        }
        if let Some(a) = t.get("array") {
            return format!(
                "[{}; {}]",
                self.ty(&a["type"], at),
                a["len"].as_str().unwrap_or("_")
            );
        }
        if let Some(items) = t.get("tuple").and_then(Value::as_array) {
            let items = items.clone();
            let tys: Vec<String> = items.iter().map(|i| self.ty(i, at)).collect();
            return format!("({})", tys.join(", "));
        }
        if let Some(b) = t.get("impl_trait") {
            return format!("impl {}", self.bounds(b, at));
        }
        if let Some(d) = t.get("dyn_trait") {
            let traits: Vec<String> = d["traits"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|p| self.path(&p["trait"], at))
                .collect();
            return format!("dyn {}", traits.join(" + "));
        }
        if let Some(q) = t.get("qualified_path") {
            let self_ty = self.ty(&q["self_type"], at);
            return format!("{self_ty}::{}", q["name"].as_str().unwrap_or("?"));
        }
        if let Some(r) = t.get("raw_pointer") {
            let m = if r["is_mutable"] == true {
                "mut"
            } else {
                "const"
            };
            return format!("*{m} {}", self.ty(&r["type"], at));
        }
        if let Some(f) = t.get("function_pointer") {
            let inputs: Vec<String> = f["sig"]["inputs"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|p| self.ty(&p[1], at))
                .collect();
            let output = match &f["sig"]["output"] {
                Value::Null => String::new(),
                o => format!(" -> {}", self.ty(o, at)),
            };
            return format!("fn({}){output}", inputs.join(", "));
        }
        if t.get("infer").is_some() {
            return "_".to_owned();
        }
        format!("{t}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// rustdoc's JSON for a facade of one module with one function that takes a
    /// re-exported inner type and returns one it does not re-export, and a public struct
    /// whose field is `Vec<String>`: the listing names each (the re-exported type by the
    /// path its user names it by), and the one leak is the unexported type, named by its
    /// inner crate's path.
    fn doc() -> Value {
        json!({
            "root": 0, "format_version": 57,
            "external_crates": {"1": {"name": "inferlint_core"}, "2": {"name": "alloc"}},
            "paths": {
                "10": {"crate_id": 1, "path": ["inferlint_core", "status", "Status"], "kind": "enum"},
                "11": {"crate_id": 1, "path": ["inferlint_core", "whatif", "Band"], "kind": "struct"},
                "12": {"crate_id": 2, "path": ["alloc", "vec", "Vec"], "kind": "struct"},
                "13": {"crate_id": 2, "path": ["alloc", "string", "String"], "kind": "struct"}
            },
            "index": {
                "0": {"name": "inferlint", "visibility": "public", "inner": {"module": {"items": [1, 2, 3]}}},
                "1": {"name": null, "visibility": "public", "inner": {"use": {"source": "inferlint_core::status::Status", "name": "Status", "id": 10, "is_glob": false}}},
                "2": {"name": "judge", "visibility": "public", "inner": {"function": {
                    "sig": {"inputs": [["s", {"resolved_path": {"path": "Status", "id": 10, "args": null}}]],
                            "output": {"resolved_path": {"path": "Band", "id": 11, "args": null}}},
                    "generics": {"params": [], "where_predicates": []}, "header": {"is_async": false}}}},
                "3": {"name": "Summary", "visibility": "public", "attrs": [], "inner": {"struct": {
                    "kind": {"plain": {"fields": [4, 5]}}, "impls": []}}},
                "4": {"name": "names", "visibility": "public", "inner": {"struct_field":
                    {"resolved_path": {"path": "Vec", "id": 12, "args": {"angle_bracketed": {"args": [
                        {"type": {"resolved_path": {"path": "String", "id": 13, "args": null}}}], "constraints": []}}}}}},
                "5": {"name": "hidden", "visibility": "crate", "inner": {"struct_field": {"primitive": "u64"}}}
            }
        })
    }

    #[test]
    fn the_listing_names_each_public_item_and_the_leak_is_the_unexported_inner_type() {
        let api = Api::of(&doc()).unwrap();
        let lines: Vec<&str> = api
            .listing
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect();
        assert_eq!(
            lines,
            [
                "pub fn judge(s: inferlint::Status) -> inferlint_core::whatif::Band [inferlint::judge]",
                "pub inferlint::Summary.names: Vec<String>",
                "pub struct inferlint::Summary",
                "pub use inferlint::Status = inferlint_core::status::Status",
            ]
        );
        assert_eq!(
            api.leaks,
            ["inferlint::judge names inferlint_core::whatif::Band"]
        );
    }
}
