//! `record` then `analyze`: the recorded trace reads back as the same events (modulo
//! ids), and the offline analysis reports the same warnings (kind, analysis, location,
//! both accesses with thread, op, site and stack) as the online run.

use std::sync::Arc;

use analyses::Chain;
use analyses::ChainOptions;
use analyses::env::{Env, LocName, SiteInfo};
use analyses::event::{Loc, MethodId, ObjId, OwnedEvent, SiteId};
use analyses::offline::{analyze, run_events};
use analyses::report::render_text;
use analyses::testing::{GenConfig, gen_trace};
use analyses::trace::{op_text, parse_std};

/// Names like the VM gives them: instance fields, array elements, statics; sites
/// `a.cj:L:C` in methods.
struct VmLikeEnv;

impl Env for VmLikeEnv {
    fn site(&self, site: SiteId) -> SiteInfo {
        SiteInfo {
            position: format!("a.cj:{}:{}", site.0, site.0 % 9 + 1),
            method: Some(format!("Main.m{}", site.0 % 3)),
        }
    }
    fn method_name(&self, method: MethodId) -> String {
        format!("Main.m{}", method.0)
    }
    fn loc_name(&self, loc: Loc) -> LocName {
        let k = loc.slot;
        match k % 3 {
            0 => LocName {
                name: format!("Node.f{k}"),
                index: None,
                object: Some(format!("o{}", 17 + k)),
            },
            1 => LocName {
                name: "int[]".into(),
                index: Some(k as u64),
                object: Some(format!("o{}", 5 + k)),
            },
            _ => LocName {
                name: format!("Main.s{k}"),
                index: None,
                object: None,
            },
        }
    }
    fn obj_label(&self, obj: ObjId) -> String {
        format!("o{}", obj.0)
    }
}

const DETECTORS: &str = "fasttrack:djit:goldilocks:eraser:hb";

/// Warnings rendered as text, without trace line numbers (the online run has none).
fn rendered(chain: &Chain) -> Vec<String> {
    chain
        .warnings()
        .into_iter()
        .map(|mut r| {
            r.warning.event = None;
            for a in &mut r.warning.accesses {
                a.event = None;
            }
            render_text(&r, chain.shared.env.as_ref(), &chain.shared.ctxs)
        })
        .collect()
}

#[test]
fn recorded_traces_give_the_same_events_and_warnings() {
    let dir = std::env::temp_dir().join(format!("capvm-record-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = GenConfig {
        methods: true,
        allocs: true,
        deterministic: true,
        vars: 4,
        ..GenConfig::default()
    };
    let mut with_warnings = 0;
    for seed in 0..150u64 {
        // Online: events as the VM delivers them (no line numbers, repeated sites).
        let events: Vec<OwnedEvent> = gen_trace(seed, &cfg)
            .into_iter()
            .map(|mut e| {
                e.site = SiteId(e.site.0 % 11 + 1);
                e.index = 0;
                e
            })
            .collect();
        let path = dir.join(format!("t{seed}.std"));
        let options = ChainOptions {
            record_path: Some(path.clone()),
            ..ChainOptions::default()
        };
        let env: Arc<dyn Env> = Arc::new(VmLikeEnv);
        let online =
            analyses::passes::chain(&format!("record:{DETECTORS}"), env.clone(), options).unwrap();
        run_events(&online, &events);
        online.finish();

        // Offline.
        let text = std::fs::read_to_string(&path).unwrap();
        let trace = parse_std(&text).unwrap_or_else(|e| panic!("{}:{e}", path.display()));
        assert!(
            trace.events.iter().all(|e| e.index != 0),
            "nothing inserted"
        );
        let shape_online: Vec<String> = events
            .iter()
            .map(|e| {
                format!(
                    "T{}|{}|{}",
                    e.tid,
                    op_text(env.as_ref(), &e.as_event()),
                    env.site(e.site).position
                )
            })
            .collect();
        let shape_offline: Vec<String> = trace
            .events
            .iter()
            .map(|e| {
                format!(
                    "{}|{}|{}",
                    trace.env.thread_name(e.tid),
                    op_text(trace.env.as_ref(), &e.as_event()),
                    trace.env.site(e.site).position
                )
            })
            .collect();
        assert_eq!(shape_offline, shape_online, "seed {seed}");

        let offline = analyze(&trace, DETECTORS, ChainOptions::default()).unwrap();
        let (a, b) = (rendered(&online), rendered(&offline));
        assert_eq!(a, b, "seed {seed}");
        // Offline warnings carry the trace line of the detecting access.
        for r in offline.warnings() {
            let line = r.warning.event.expect("event line");
            let text_line = text.lines().nth(line as usize - 1).unwrap();
            assert!(text_line.contains("(") && !text_line.starts_with('#'));
        }
        with_warnings += usize::from(!a.is_empty());
    }
    assert!(with_warnings > 50, "{with_warnings}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn recorded_location_names_read_back_like_the_vm_shows_them() {
    let text = "# capvm-record v1\n# site 3 a.cj:3:5 Main.run\nT0|w(o17.Node.next)|3\nT0|r(o5.int[][3])|3\nT0|r(Main.count)|3\n";
    let t = parse_std(text).unwrap();
    let names: Vec<String> = t
        .events
        .iter()
        .filter_map(|e| match e.as_event().kind {
            analyses::EventKind::Read { loc } | analyses::EventKind::Write { loc, .. } => {
                let n = t.env.loc_name(loc);
                Some(format!("{n} {:?}", n.object))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        names,
        vec![
            "Node.next Some(\"o17\")",
            "int[3] Some(\"o5\")",
            "Main.count None"
        ]
    );
    let s = t.env.site(t.events[1].site);
    assert_eq!(
        (s.position.as_str(), s.method.as_deref()),
        ("a.cj:3:5", Some("Main.run"))
    );
}

#[test]
fn record_needs_a_writable_file() {
    let env: Arc<dyn Env> = Arc::new(VmLikeEnv);
    let err = analyses::passes::chain("record", env.clone(), ChainOptions::default())
        .err()
        .expect("no --record file");
    assert!(err.0.contains("--record"), "{err}");
    let options = ChainOptions {
        record_path: Some("/nonexistent-dir/x/t.std".into()),
        ..ChainOptions::default()
    };
    let err = analyses::passes::chain("record", env, options)
        .err()
        .expect("bad path");
    assert!(
        err.0.contains("cannot create /nonexistent-dir/x/t.std"),
        "{err}"
    );
}
