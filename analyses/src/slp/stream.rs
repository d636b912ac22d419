//! Compressing a trace as it is read or recorded: [`compress_std`] (`capvm compress`)
//! reads an STD trace on one thread and compresses on another; [`SlpSink`] (`capvm run
//! --record FILE.slp`) takes the STD text the `record` pass writes and compresses it
//! on a thread of its own, so no expanded trace is ever stored.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use crate::event::{ObjId, OwnedKind, Tid};
use crate::trace::{ReadError, StdReader, TOKEN_SITE_BIT, TraceEnv, TraceInput, read_renumbering};

use super::compress::Front;
use super::sequitur::Sequitur;
use super::{Grammar, MAX_PERIOD, SiteCode, write_slp};

/// Tokens handed to the Sequitur thread at a time.
const TOKENS: usize = 1 << 12;
/// Lines whose end the driver remembers (a block has at most `MAX_PERIOD` lines).
const RING: usize = 2 * MAX_PERIOD;

/// What skipping the copies of the current run's block needs (see
/// [`StdReader::skip_copies`]): the block's text, its lines, its numeric locations.
struct Copy {
    text: Vec<u8>,
    lines: u64,
    sites: Vec<(u64, u32)>,
}

/// Whether the events of a copy leave the reader's state as they found it (see
/// [`StdReader::skip_copies`]): accesses, allocations and, per lock, either
/// acquire first and release last or a release first and an acquire by the same
/// thread last (the copy was well-formed where it was read, so the acquires and
/// releases of a lock alternate in it).
fn neutral(front: &Front, block: &[u32]) -> bool {
    let mut locks: Vec<(ObjId, bool, Tid, bool, Tid)> = Vec::new();
    for &t in block {
        let l = front.label(t);
        let (lock, acq) = match l.kind {
            OwnedKind::Read { .. }
            | OwnedKind::Write { .. }
            | OwnedKind::VolatileRead { .. }
            | OwnedKind::VolatileWrite { .. }
            | OwnedKind::Alloc { .. } => continue,
            OwnedKind::Acquire { lock } => (lock, true),
            OwnedKind::Release { lock } => (lock, false),
            _ => return false,
        };
        match locks.iter_mut().find(|e| e.0 == lock) {
            Some(e) => (e.3, e.4) = (acq, l.tid),
            None => locks.push((lock, acq, l.tid, acq, l.tid)),
        }
    }
    locks
        .iter()
        .all(|&(_, first_acq, first_tid, last_acq, last_tid)| {
            (first_acq && !last_acq) || (!first_acq && last_acq && first_tid == last_tid)
        })
}

/// Whether `b` is blank as `str::trim` sees it (ASCII).
fn blank(b: &[u8]) -> bool {
    b.iter()
        .all(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))
}

/// The text of the copy of `block` just read (its last line is `last`, the last
/// `consecutive` events were on consecutive lines, `ring` has where recent event lines
/// end), if its copies can be skipped.
fn copy_text<R: Read>(
    front: &Front,
    block: &[u32],
    reader: &StdReader<R>,
    ring: &[(u64, u64); RING],
    consecutive: u64,
    last: u64,
) -> Option<Copy> {
    let p = block.len() as u64;
    if consecutive < p || !neutral(front, block) {
        return None;
    }
    // The copy starts where the line before it ended.
    let first = last + 1 - p;
    let start = match ring[(first - 1) as usize % RING] {
        _ if first == 1 => 0,
        (line, end) if line == first - 1 => end,
        _ => return None,
    };
    let text = reader.recent(start)?;
    if !text.is_ascii() || !text.ends_with(b"\n") {
        return None;
    }
    let mut sites = Vec::new();
    let mut n = 0;
    for (i, line) in text[..text.len() - 1].split(|&c| c == b'\n').enumerate() {
        n += 1;
        let &t = block.get(i)?;
        match front.label(t).site {
            // The line number: only a line without a location column says that
            // wherever it is.
            SiteCode::Line => {
                if line.split(|&c| c == b'|').nth(2).is_some_and(|l| !blank(l)) {
                    return None;
                }
            }
            SiteCode::Site(s) if s.0 & TOKEN_SITE_BIT == 0 => sites.push((i as u64, s.0)),
            SiteCode::Site(_) => {}
        }
    }
    (n == p).then(|| Copy {
        text: text.to_vec(),
        lines: p,
        sites,
    })
}

/// Read `reader` and run the compressor's front on its events, the tokens to `tx`.
/// Where the run detector is inside a run and the next lines are byte for byte the
/// copy of the block just read, they are skipped unparsed (identical lines are
/// identical events: [`StdReader::skip_copies`]), so a loop's iterations cost a
/// comparison of bytes each.
fn front_loop<R: Read>(
    reader: &mut StdReader<R>,
    tx: &Sender<Vec<u64>>,
) -> Result<Front, ReadError> {
    let mut front = Front::new();
    let mut out = Vec::with_capacity(16);
    let mut tokens = Vec::with_capacity(TOKENS);
    let mut ring = [(0u64, 0u64); RING];
    let (mut consecutive, mut last) = (0u64, 0u64);
    let mut copy: (u64, Option<Copy>) = (0, None);
    loop {
        out.clear();
        // One line at a time: the skip starts right after a copy.
        let more = reader.read_batch(&mut out, 1)?;
        for e in &out {
            if e.index == 0 {
                continue;
            }
            consecutive = if e.index == last + 1 {
                consecutive + 1
            } else {
                1
            };
            last = e.index;
            ring[e.index as usize % RING] = (e.index, reader.next_line_start());
            front.push(e, &mut tokens);
        }
        if let Some((run, block)) = front.at_copy_boundary() {
            if copy.0 != run {
                copy = (
                    run,
                    copy_text(&front, block, reader, &ring, consecutive, last),
                );
            }
            if let Some(c) = &copy.1 {
                let n = reader.skip_copies(&c.text, c.lines, &c.sites, u64::MAX)?;
                front.push_copies(n);
                last += n * c.lines;
                consecutive += n * c.lines;
            }
        }
        if tokens.len() >= TOKENS {
            let full = std::mem::replace(&mut tokens, Vec::with_capacity(TOKENS));
            if tx.send(full).is_err() {
                break;
            }
        }
        if !more {
            break;
        }
    }
    front.flush(&mut tokens);
    let _ = tx.send(tokens);
    Ok(front)
}

/// Reading and the run detector on this thread, Sequitur on another.
fn compress_reader<R: Read + Send>(
    reader: StdReader<R>,
    env: Arc<TraceEnv>,
) -> Result<Grammar, ReadError> {
    let (tx, rx) = crossbeam_channel::bounded::<Vec<u64>>(8);
    let mut reader = reader;
    std::thread::scope(|s| {
        let seq = s.spawn(move || {
            let mut q = Sequitur::new();
            for batch in rx.iter() {
                for t in batch {
                    q.push(t);
                }
            }
            q.finish()
        });
        let front = front_loop(&mut reader, &tx);
        drop(tx);
        let sg = seq.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        Ok(front?.build(&sg, env))
    })
}

/// Read the STD trace `input` and compress it (reading and compression overlap).
/// Memory: the grammar and a few batches of events.
pub fn compress_std(input: TraceInput<'_>) -> Result<Grammar, ReadError> {
    read_renumbering(
        || input.open(),
        |error| ReadError::Io { line: 0, error },
        |e| matches!(e, ReadError::Renumber),
        compress_reader,
    )
}

/// The receiving end of the pipe, as a `Read`.
struct ChannelReader {
    rx: Receiver<Vec<u8>>,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.buf.len() {
            match self.rx.recv() {
                Ok(b) => {
                    self.buf = b;
                    self.pos = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

const CHUNK: usize = 1 << 16;

/// A `Write` that compresses the STD text written to it into an `.slp` file.
/// [`SlpSink::finish`] ends the stream and writes the file.
pub struct SlpSink {
    tx: Arc<Mutex<Option<Sender<Vec<u8>>>>>,
    buf: Vec<u8>,
}

/// Finishes an [`SlpSink`]: closes the stream, waits for the compressor and writes
/// the file.
pub struct SlpFinisher {
    tx: Arc<Mutex<Option<Sender<Vec<u8>>>>>,
    worker: Option<std::thread::JoinHandle<Result<Grammar, String>>>,
    path: PathBuf,
}

impl SlpSink {
    /// A sink that compresses into `path` (written by the finisher).
    pub fn new(path: PathBuf) -> (SlpSink, SlpFinisher) {
        let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(16);
        let worker = std::thread::spawn(move || {
            let env = Arc::new(TraceEnv::default());
            let src = ChannelReader {
                rx,
                buf: Vec::new(),
                pos: 0,
            };
            let reader = StdReader::new(src, env.clone());
            compress_reader(reader, env).map_err(|e| match e {
                ReadError::Renumber => {
                    "thread names T<n> clash with other names (more than 1024 threads?)".into()
                }
                e => format!("line {e}"),
            })
        });
        let tx = Arc::new(Mutex::new(Some(tx)));
        (
            SlpSink {
                tx: tx.clone(),
                buf: Vec::with_capacity(CHUNK),
            },
            SlpFinisher {
                tx,
                worker: Some(worker),
                path,
            },
        )
    }

    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let b = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        match &*self.tx.lock() {
            Some(tx) => tx
                .send(b)
                .map_err(|_| io::Error::other("the compressor stopped")),
            None => Err(io::Error::other("the trace was already finished")),
        }
    }
}

impl Write for SlpSink {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

impl SlpFinisher {
    /// Close the stream (the sink must have been flushed), compress the rest and
    /// write the file. Idempotent: later calls return `Ok`.
    pub fn finish(&mut self) -> Result<(), String> {
        self.tx.lock().take();
        let Some(w) = self.worker.take() else {
            return Ok(());
        };
        let g = w
            .join()
            .map_err(|_| "the compressor failed".to_string())??;
        std::fs::write(&self.path, write_slp(&g)).map_err(|e| e.to_string())
    }
}
