//! The STD reader over a trace in memory: [`parse_std`] collects the events of a
//! [`StdReader`] (format: see the module doc of [`super`]).

use super::{ReadError, StdReader, Trace, TraceError};

/// Read a trace in RAPID's STD format plus capvm's extension and keep its events.
/// Never panics; the first malformed line gives an error naming it. (`capvm
/// analyze` streams the events instead: [`crate::offline::analyze_stream`].)
pub fn parse_std(text: &str) -> Result<Trace, TraceError> {
    let read = |mut reader: StdReader<&[u8]>, env| {
        let mut events = Vec::new();
        while reader.read_batch(&mut events, usize::MAX)? {}
        Ok(Trace { events, env })
    };
    let is_renumber = |e: &ReadError| matches!(e, ReadError::Renumber);
    // Reading a byte slice cannot fail.
    let io = |error| ReadError::Io { line: 0, error };
    super::read_renumbering(|| Ok(text.as_bytes()), io, is_renumber, read).map_err(|e| match e {
        ReadError::Trace(e) => e,
        ReadError::Io { line, error } => TraceError {
            line,
            message: error.to_string(),
        },
        ReadError::Renumber => TraceError {
            line: 0,
            message: "thread numbering failed twice".into(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Loc, OwnedKind, SiteId};

    #[test]
    fn numbered_threads_keep_their_number_whatever_comes_first() {
        let t = parse_std("foo|w(V1)|1\nT0|w(V2)|2\nT1|w(V1)|3\nbar|fork(T2)|4\n").unwrap();
        let tid = |name: &str| t.env.known_thread(name).expect(name);
        assert_eq!((tid("T0"), tid("T1"), tid("T2")), (0, 1, 2));
        assert!(![0, 1, 2].contains(&tid("foo")) && ![0, 1, 2].contains(&tid("bar")));
        for name in ["foo", "T0", "T1", "T2", "bar"] {
            assert_eq!(t.env.thread_name(tid(name)), name);
        }
    }

    #[test]
    fn reads_rapid_lines_and_inserts_thread_events() {
        let t =
            parse_std("T0|w(V1)|12\nT0|fork(T1)|13\n\n# comment\nT1|r(V1)|14\nT0|join(T1)|15\n")
                .unwrap();
        let kinds: Vec<(u32, &str, u64)> = t
            .events
            .iter()
            .map(|e| (e.tid, e.as_event().kind.name(), e.index))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (0, "thread_start", 0),
                (0, "write", 1),
                (0, "fork", 2),
                (1, "thread_start", 0),
                (1, "read", 5),
                (1, "thread_end", 0),
                (0, "join", 6),
                (0, "thread_end", 0),
            ]
        );
        assert_eq!(t.events[1].site, SiteId(12));
        assert_eq!(
            t.events[1].kind,
            OwnedKind::Write {
                loc: Loc {
                    obj: crate::trace::VARS,
                    slot: 0
                },
                value: None
            }
        );
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("T0|foo(x)|1", 1, "unknown operation 'foo'"),
            (
                "T0|w(V1)|1\nT0|rel(L)|2",
                2,
                "release of a lock that is not held",
            ),
            ("T0|join(T9)|1", 1, "join of unknown thread T9"),
            ("T0|acq(L)|1\nT0|acq(L)|2", 2, "not reentrant"),
            ("T0|acq(L)|1\nT1|acq(L)|2", 2, "held by thread T0"),
            ("T0|w(V1,a,b)|1", 1, "expects 1 to 2 arguments"),
            ("T0|w(V1", 1, "missing ')'"),
            ("T0", 1, "expected 'THREAD|OP|LOCATION'"),
            ("T0|end|1", 1, "end without a matching begin"),
            (
                "T0|fork(T1)|1\nT1|r(x)|2\nT0|join(T1)|3\nT1|r(x)|4",
                4,
                "after it was joined",
            ),
            ("T0|r(x)|1\nT1|r(x)|2\nT0|fork(T1)|3", 3, "already exists"),
            ("T0|bar_exit(B,0,2)|1", 1, "did not enter"),
            (
                "T0|bar_enter(B,0,2)|1\nT0|bar_exit(B,0,2)|2",
                2,
                "before all parties",
            ),
            ("T0|exit(m)|1", 1, "method exit"),
            ("T0|bar_enter(B,x,2)|1", 1, "generation must be a number"),
        ];
        for (text, line, msg) in cases {
            let e = parse_std(text)
                .err()
                .unwrap_or_else(|| panic!("{text} parsed"));
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.message.contains(msg), "{text}: {e}");
        }
        let e = parse_std("T0|foo|7").unwrap_err();
        assert_eq!(format!("t.std:{e}"), "t.std:1: unknown operation 'foo'");
    }
}
