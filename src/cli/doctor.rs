//! `glassbox doctor`: what glassbox sees of its data dir, store, config, providers, model
//! files and terminal. Never prints a key.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::{Value, json};

use super::{Ctx, print_json};
use crate::config::ProviderKind;
use crate::config::StoreTarget;
use crate::config::providers;
use crate::engines::transcript::export;

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn colour_support() -> &'static str {
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return "none (NO_COLOR)";
    }
    let colorterm = std::env::var("COLORTERM").unwrap_or_default();
    if colorterm.contains("truecolor") || colorterm.contains("24bit") {
        return "truecolor";
    }
    let term = std::env::var("TERM").unwrap_or_default();
    if term.contains("256color") {
        "256"
    } else if term.is_empty() || term == "dumb" {
        "none"
    } else {
        "16"
    }
}

/// `--compact`: the node records written before the store had a dictionary compressed
/// with it (one trained first when there is none), the full-text index merged into one run
/// (in blocks, without tombstones), then, for a redb file, the file's size before and
/// after, or `busy` when another process was in a transaction on it. A PostgreSQL database
/// gives the space back itself (autovacuum).
fn compact_store(ctx: &Ctx) -> Result<Value> {
    let (mut store, file) = match ctx.store_target()? {
        StoreTarget::File(path) if !path.exists() => {
            anyhow::bail!("there is no store to compact at {}", path.display())
        }
        StoreTarget::File(path) => (crate::store::Store::open(&path)?, true),
        StoreTarget::Postgres(_) => (ctx.open_store()?, false),
    };
    // The file's size before any of it: the rewrites below may grow the file for a moment
    // (redb takes room for new pages before the old ones are freed), which is not what
    // compacting gained.
    let start_bytes = store.file_bytes();
    let spinner = super::working(
        "doctor: compressing node records with the dictionary",
        false,
    );
    let progress = |n: u64| {
        if let Some(s) = &spinner {
            s.set_message(format!(
                "doctor: compressing node records with the dictionary: {n} rewritten…"
            ));
        }
    };
    let recompressed = store.recompress_records(&progress).and_then(|r| {
        if let Some(s) = &spinner {
            s.set_message("doctor: merging the search index…");
        }
        let before = store.search_runs()?.len();
        store.index_pending()?;
        let postings = store.write(|w| w.compact_search_index())?;
        let after = store.search_runs()?.len();
        let index = json!({"runs_before": before, "runs_after": after, "postings": postings});
        Ok((r, index))
    });
    if let Some(s) = &spinner {
        s.set_message("doctor: giving free pages back…");
    }
    let compacted = recompressed
        .map_err(anyhow::Error::from)
        .and_then(|(r, index)| {
            let mut v = if !file {
                json!({"database": true})
            } else {
                match store.compact()? {
                    crate::store::Compacted::Done { after, .. } => {
                        json!({"before_bytes": start_bytes, "after_bytes": after})
                    }
                    crate::store::Compacted::Busy => json!({"busy": true}),
                }
            };
            v["recompressed"] = json!(r);
            v["search_index"] = index;
            Ok(v)
        });
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    compacted
}

/// The `--compact` lines of the text report.
fn print_compacted(c: &Value) {
    let r = &c["recompressed"];
    match (r["dict"].as_u64(), r["records"].as_u64()) {
        (None, _) => println!(
            "recompressed nothing: no dictionary yet (it needs a quarter megabyte of records)"
        ),
        (Some(id), Some(n)) => println!(
            "recompressed {n} node records with {}dictionary {id}{}",
            if r["trained"] == true {
                "the newly trained "
            } else {
                ""
            },
            match (r["bytes_before"].as_u64(), r["bytes_after"].as_u64()) {
                (Some(b), Some(a)) if n > 0 => format!(": {} -> {}", human_size(b), human_size(a)),
                _ => String::new(),
            }
        ),
        _ => {}
    }
    let index = &c["search_index"];
    match (index["runs_before"].as_u64(), index["runs_after"].as_u64()) {
        (Some(0), _) => println!("search index empty"),
        (Some(before), Some(after)) => println!(
            "search index {before} run{} -> {after} ({} postings)",
            if before == 1 { "" } else { "s" },
            index["postings"].as_u64().unwrap_or(0)
        ),
        _ => {}
    }
    match (c["before_bytes"].as_u64(), c["after_bytes"].as_u64()) {
        (Some(before), Some(after)) => println!(
            "compacted    {} -> {}",
            human_size(before),
            human_size(after)
        ),
        _ if c["database"] == true => println!(
            "compacted    nothing: a PostgreSQL database gives freed space back itself (autovacuum)"
        ),
        _ => println!("compacted    nothing: another glassbox was using the store; try again"),
    }
}

/// The redb file: size, schema, counts, table sizes, compression. Reading every table and
/// record of a large file takes a while, and long on a cold disk: `step` names each part.
fn redb_store(store_path: &std::path::Path, step: &dyn Fn(&str)) -> Value {
    if !store_path.exists() {
        return json!({"backend": "redb", "path": store_path, "exists": false});
    }
    step("opening the store");
    let s = match crate::store::Store::open(store_path) {
        Ok(s) => s,
        Err(e) => return json!({"backend": "redb", "path": store_path, "error": e.to_string()}),
    };
    step("counting the store's rows");
    let counts = s.counts().ok();
    step("measuring the store's tables");
    let tables = s.table_sizes().ok();
    let (compression, raw_compression) = compression(&s, step);
    step("looking for unfinished imports");
    let unfinished = unfinished_imports(&s);
    json!({
        "backend": "redb",
        "path": store_path,
        "size_bytes": std::fs::metadata(store_path).map(|m| m.len()).unwrap_or(0),
        "schema_version": s.schema_version().ok(),
        "counts": counts,
        "tables": tables,
        "compression": compression,
        "raw_compression": raw_compression,
        "search_runs": s.search_runs().ok(),
        "search_pending": s.pending_index_count().ok(),
        "unfinished_imports": unfinished,
    })
}

/// `, 1 long trace waiting for the index` when streamed nodes wait for the next search to
/// add their words (see `Store::index_pending`), else nothing.
fn pending_note(st: &Value) -> String {
    match st["search_pending"].as_u64() {
        Some(n) if n > 0 => format!(
            ", {n} long trace{} waiting for the next search to index {}",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" }
        ),
        _ => String::new(),
    }
}

/// The node records' and the raw streams' size as stored and uncompressed (every record
/// is read: over a PostgreSQL connection, a large store takes a while).
fn compression(s: &crate::store::Store, step: &dyn Fn(&str)) -> (Value, Value) {
    step("reading the node records");
    let nodes = s.node_compression().ok().map(|c| {
        json!({
            "node_bytes_stored": c.stored,
            "node_bytes_plain": c.plain,
            "node_bytes_without_dictionary": c.without_dict,
            "ratio": c.ratio(),
            "dictionary": s.record_dict().map(|d| json!({"id": d.id(), "bytes": d.len()})),
        })
    });
    step("reading the raw streams");
    let raw = s.raw_compression().ok().map(|c| {
        json!({
            "bytes_stored": c.stored,
            "bytes_received": c.plain,
            "ratio": c.ratio(),
        })
    });
    (json!(nodes), json!(raw))
}

/// The sessions a killed `import json` left partway ([`export::UNFINISHED_IMPORT`]).
fn unfinished_imports(s: &crate::store::Store) -> Vec<String> {
    s.sessions()
        .map(|all| {
            all.into_iter()
                .filter(export::is_unfinished)
                .map(|x| x.id.to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The PostgreSQL database: the URL without its password, the server's version, TLS, the
/// round-trip latency, and the store's schema, counts, compression and index runs.
fn postgres_store(url: &str, step: &dyn Fn(&str)) -> Value {
    let label = crate::config::store_target::redact(url);
    let fail = |e: String| json!({"backend": "postgres", "url": label, "error": e});
    let backend = match StoreTarget::connect_postgres(url) {
        Ok(b) => b,
        Err(e) => return fail(format!("{e:#}")),
    };
    let info = match backend.server_info() {
        Ok(i) => i,
        Err(e) => return fail(e.to_string()),
    };
    let mut v = json!({
        "backend": "postgres",
        "url": info.url,
        "server_version": info.version,
        "server_version_num": info.version_num,
        "tls": info.tls,
        "latency_ms": info.latency.as_secs_f64() * 1e3,
        "pgvector": info.pgvector,
    });
    match crate::store::Store::open_backend(std::sync::Arc::new(backend), info.url.clone()) {
        Ok(s) => {
            v["schema_version"] = json!(s.schema_version().ok());
            step("counting the store's rows");
            v["counts"] = json!(s.counts().ok());
            let (nodes, raw) = compression(&s, step);
            v["compression"] = nodes;
            v["raw_compression"] = raw;
            v["search_runs"] = json!(s.search_runs().ok());
            v["search_pending"] = json!(s.pending_index_count().ok());
            step("looking for unfinished imports");
            v["unfinished_imports"] = json!(unfinished_imports(&s));
        }
        Err(e) => v["error"] = json!(e.to_string()),
    }
    v
}

/// Everything `doctor` reports; `step` names each slow part as it starts.
fn gather(ctx: &Ctx, step: &dyn Fn(&str)) -> Value {
    let cfg = &ctx.loaded.config;
    let data_dir = &ctx.paths.data_dir;
    let store = match ctx.store_target() {
        Ok(StoreTarget::File(path)) => redb_store(&path, step),
        Ok(StoreTarget::Postgres(url)) => {
            step("asking the PostgreSQL server");
            postgres_store(&url, step)
        }
        Err(e) => json!({"error": e.to_string()}),
    };
    let selected = providers::resolve_kind(ctx);
    let providers: Vec<Value> = [
        ProviderKind::Anthropic,
        ProviderKind::OpenAi,
        ProviderKind::Ollama,
        ProviderKind::Local,
    ]
    .into_iter()
    .map(|k| {
        json!({
            "name": k.as_str(),
            "selected": k == selected,
            "key_configured": providers::key_configured(ctx, k),
            "model": providers::model_name(ctx, k),
            "base_url": providers::base_url(cfg, k),
        })
    })
    .collect();
    let local_model = cfg
        .providers
        .local
        .resolved_model_path(&ctx.paths.models_dir);
    // An opt-in model (Gemma 3) that is absent is only a problem when it is the one selected.
    step("checking the model files");
    let models: Vec<Value> = crate::models::check(&ctx.paths.models_dir, true)
        .into_iter()
        .map(|m| {
            json!({
                "name": m.file.name,
                "path": m.path,
                "present": m.present,
                "size_bytes": m.size,
                "sha256_ok": m.sha256_ok,
                "error": m.error,
                "optional": m.file.optional,
                "selected": m.path == local_model,
                "setup": crate::models::setup_command(&m.file),
            })
        })
        .collect();
    let (cols, rows) = crossterm::terminal::size().unwrap_or((0, 0));
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "data_dir": {
            "path": data_dir,
            "exists": data_dir.exists(),
        },
        "config_dir": ctx.paths.config_dir,
        "config_files": ctx.loaded.files,
        "store": store,
        "provider": selected.as_str(),
        "providers": providers,
        "models_dir": ctx.paths.models_dir,
        "local_model": {"path": local_model, "exists": local_model.is_file(), "built_in": cfg!(feature = "local")},
        "models": models,
        "terminal": {
            "stdout_is_tty": std::io::stdout().is_terminal(),
            "columns": cols,
            "rows": rows,
            "colours": colour_support(),
            "term": std::env::var("TERM").ok(),
        },
    })
}

pub fn run(ctx: &Ctx, json_out: bool, compact: bool) -> Result<ExitCode> {
    let compacted = if compact {
        Some(compact_store(ctx)?)
    } else {
        None
    };
    // A spinner on a terminal's stderr says what is being read while the report is made.
    let spinner = super::working("doctor", false);
    let step = |what: &str| {
        if let Some(s) = &spinner {
            s.set_message(format!("doctor: {what}…"));
        }
    };
    let mut v = gather(ctx, &step);
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    if let Some(c) = &compacted {
        v["compacted"] = c.clone();
    }
    if !json_out && let Some(c) = &compacted {
        print_compacted(c);
    }
    if json_out {
        print_json(&v)?;
        return Ok(ExitCode::SUCCESS);
    }
    let s = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    println!("glassbox {}", s(&v["version"]));
    println!(
        "data dir     {}{}",
        s(&v["data_dir"]["path"]),
        if v["data_dir"]["exists"] == true {
            ""
        } else {
            " (not created yet)"
        }
    );
    println!("config dir   {}", s(&v["config_dir"]));
    let files: Vec<String> = v["config_files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(s)
        .collect();
    println!(
        "config files {}",
        if files.is_empty() {
            "defaults only".into()
        } else {
            files.join(", ")
        }
    );
    let st = &v["store"];
    let at = if st["backend"] == "postgres" {
        s(&st["url"])
    } else {
        s(&st["path"])
    };
    if let Some(err) = st.get("error") {
        println!("store        {at}  ERROR: {}", s(err));
    } else if st["backend"] == "postgres" {
        println!(
            "store        PostgreSQL {at}  schema v{}",
            s(&st["schema_version"])
        );
        println!(
            "  server     {}  TLS {}  round trip {:.2} ms",
            s(&st["server_version"]),
            if st["tls"] == true { "yes" } else { "no" },
            st["latency_ms"].as_f64().unwrap_or(0.0)
        );
        match st["pgvector"].as_str() {
            Some(v) => println!(
                "  vectors    searched exactly by glassbox (the server offers pgvector {v}; it is not needed)"
            ),
            None => println!(
                "  vectors    searched exactly by glassbox (no pgvector on the server; none is needed)"
            ),
        }
        if let Some(c) = st["counts"].as_object() {
            let parts: Vec<String> = c.iter().map(|(k, n)| format!("{k} {n}")).collect();
            println!("             {}", parts.join("  "));
        }
        let runs = st["search_runs"].as_array().map_or(0, Vec::len);
        println!(
            "  search     {runs} run{} in the index{}",
            if runs == 1 { "" } else { "s" },
            pending_note(st)
        );
        print_compression(st);
    } else if st.get("exists") == Some(&Value::Bool(false)) {
        println!("store        {} (created on first use)", s(&st["path"]));
    } else {
        println!(
            "store        {}  {}  schema v{}",
            s(&st["path"]),
            human_size(st["size_bytes"].as_u64().unwrap_or(0)),
            s(&st["schema_version"])
        );
        if let Some(c) = st["counts"].as_object() {
            let parts: Vec<String> = c.iter().map(|(k, n)| format!("{k} {n}")).collect();
            println!("             {}", parts.join("  "));
        }
        if let Some(tables) = st["tables"].as_array() {
            let size = |t: &Value| {
                ["stored", "metadata", "fragmented"]
                    .iter()
                    .map(|k| t[k].as_u64().unwrap_or(0))
                    .sum::<u64>()
            };
            let file = st["size_bytes"].as_u64().unwrap_or(0).max(1);
            let parts: Vec<String> = tables
                .iter()
                .take(6)
                .map(|t| {
                    let b = size(t);
                    format!(
                        "{} {} ({:.0}%)",
                        s(&t["name"]),
                        human_size(b),
                        b as f64 * 100.0 / file as f64
                    )
                })
                .collect();
            println!("  largest    {}", parts.join("  "));
            let index: u64 = tables
                .iter()
                .filter(|t| crate::store::is_search_table(&s(&t["name"])))
                .map(size)
                .sum();
            let used: u64 = tables.iter().map(size).sum();
            println!(
                "  free       {} ({:.0}% of the file: pages no table uses)",
                human_size(file.saturating_sub(used)),
                file.saturating_sub(used) as f64 * 100.0 / file as f64
            );
            let runs = st["search_runs"].as_array().map_or(0, Vec::len);
            println!(
                "  search     {} ({:.0}% of the file) in {runs} run{}{}",
                human_size(index),
                index as f64 * 100.0 / file as f64,
                if runs == 1 { "" } else { "s" },
                pending_note(st)
            );
        }
        print_compression(st);
    }
    if let Some(ids) = st["unfinished_imports"].as_array()
        && !ids.is_empty()
    {
        let ids: Vec<&str> = ids.iter().filter_map(Value::as_str).collect();
        println!(
            "  unfinished {} left partway by a killed `import json`: {} (importing the file again replaces {})",
            if ids.len() == 1 {
                "1 session"
            } else {
                "sessions"
            },
            ids.join(", "),
            if ids.len() == 1 { "it" } else { "them" }
        );
    }
    println!("provider     {}", s(&v["provider"]));
    for p in v["providers"].as_array().into_iter().flatten() {
        let key = match &p["key_configured"] {
            Value::Bool(true) => "key: yes",
            Value::Bool(false) => "key: no",
            _ => "key: not needed",
        };
        println!(
            "  {} {:<10} {:<16} model {}  {}",
            if p["selected"] == true { "*" } else { " " },
            s(&p["name"]),
            key,
            s(&p["model"]),
            s(&p["base_url"])
        );
    }
    println!("models dir   {}", s(&v["models_dir"]));
    for m in v["models"].as_array().into_iter().flatten() {
        let setup = s(&m["setup"]);
        let state = if m["present"] != true {
            if m["optional"] == true && m["selected"] != true {
                format!("not installed (optional: {setup})")
            } else {
                format!("missing — run {setup}")
            }
        } else {
            let size = human_size(m["size_bytes"].as_u64().unwrap_or(0));
            match &m["sha256_ok"] {
                Value::Bool(true) => format!("{size}  sha256 ok"),
                Value::Bool(false) => format!("{size}  SHA256 MISMATCH — rerun {setup}"),
                _ => size,
            }
        };
        println!("  {:<40} {}", s(&m["name"]), state);
    }
    let t = &v["terminal"];
    println!(
        "terminal     {}x{}  colours {}  TERM={}{}",
        s(&t["columns"]),
        s(&t["rows"]),
        s(&t["colours"]),
        s(&t["term"]),
        if t["stdout_is_tty"] == true {
            ""
        } else {
            "  (stdout is not a terminal)"
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The compression lines of `doctor`'s text: node records and raw streams, as stored against
/// uncompressed.
fn print_compression(st: &Value) {
    let c = &st["compression"];
    if let (Some(stored), Some(plain)) = (
        c["node_bytes_stored"].as_u64(),
        c["node_bytes_plain"].as_u64(),
    ) {
        let dict = c["dictionary"]["bytes"]
            .as_u64()
            .map(|b| {
                format!(
                    ", with a {} dictionary of this store's records",
                    human_size(b)
                )
            })
            .unwrap_or_default();
        println!(
            "  nodes      {} stored for {} of JSON ({:.1}× compression{dict})",
            human_size(stored),
            human_size(plain),
            c["ratio"].as_f64().unwrap_or(1.0)
        );
        if let Some(older) = c["node_bytes_without_dictionary"].as_u64()
            && older > 0
            && c["dictionary"].is_object()
        {
            println!(
                "             {} of them written before the dictionary: `glassbox doctor --compact` compresses them with it",
                human_size(older)
            );
        }
    }
    let c = &st["raw_compression"];
    if let (Some(stored), Some(received)) =
        (c["bytes_stored"].as_u64(), c["bytes_received"].as_u64())
        && stored > 0
    {
        println!(
            "  raw        {} stored for {} of provider streams ({:.1}× compression)",
            human_size(stored),
            human_size(received),
            c["ratio"].as_f64().unwrap_or(1.0)
        );
    }
}
