//! Offline analysis: a chain run over a parsed trace ([`crate::trace`]) instead of a
//! live VM, as `capvm analyze` does.

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use std::time::Instant;

use crate::chain::{Chain, ChainError};
use crate::event::{OwnedEvent, OwnedKind};
use crate::shared::ChainOptions;
use crate::thread::ThreadCx;
use crate::tidmap::TidMap;
use crate::trace::{Lexed, ReadError, StdReader, Trace, TraceEnv, TraceInput, read_renumbering};

/// Passes that cannot run on a trace: `bigfoot` checks the checks that BigFoot's
/// placement puts into the program when it is compiled; a trace has the accesses
/// only, so there is nothing for it to check (a command-line error, exit 64).
fn offline_refusal(name: &str) -> Option<ChainError> {
    (name == "bigfoot").then(|| {
        ChainError(
            "`bigfoot` cannot analyse a trace: its checks are placed when the program is \
             compiled and a trace has none; run the program with `capvm run --tools bigfoot` \
             (offline, `fasttrack` reports the same races)"
                .into(),
        )
    })
}

/// Run the chain `chain_spec` over `trace`: one [`ThreadCx`] per thread, forks through
/// [`Chain::fork`], every event in trace order, then [`Chain::finish`]. The returned
/// chain holds the warnings ([`Chain::warnings`]) and statistics. With
/// [`ChainOptions::fold_by_location`] (as `capvm analyze` runs it) the warnings are one
/// per analysis and location, the first in trace order, with the number of times it
/// was found; without it they fold by pair of sites, so a trace whose events all have
/// sites of their own keeps every flagged event (what the oracles compare).
pub fn analyze(
    trace: &Trace,
    chain_spec: &str,
    options: ChainOptions,
) -> Result<Chain, ChainError> {
    if let Some(e) = chain_spec
        .split(':')
        .find_map(|n| offline_refusal(n.trim()))
    {
        return Err(e);
    }
    let env: Arc<dyn crate::env::Env> = trace.env.clone();
    let chain = crate::passes::chain(chain_spec, env, options)?;
    run_events(&chain, &trace.events);
    chain.finish();
    Ok(chain)
}

/// Deliver well-formed `events` (as produced by [`crate::trace::Normalizer`]) to `chain`, in order,
/// without calling `finish`. Threads that start without a fork get a root context.
pub fn run_events(chain: &Chain, events: &[OwnedEvent]) {
    Runner::default().run(chain, events);
}

/// The thread contexts of an offline run, kept across batches of events.
#[derive(Default)]
pub(crate) struct Runner {
    cxs: TidMap<ThreadCx>,
}

impl Runner {
    pub(crate) fn run(&mut self, chain: &Chain, events: &[OwnedEvent]) {
        for ev in events {
            match &ev.kind {
                OwnedKind::Fork { child, handed } => {
                    if let Some(parent) = self.cxs.get_mut(&ev.tid) {
                        let cx = chain.fork(parent, *child, ev.site, ev.index, handed);
                        self.cxs.insert(*child, cx);
                    }
                }
                kind => {
                    if matches!(kind, OwnedKind::ThreadStart) && !self.cxs.contains_key(&ev.tid) {
                        let cx = if ev.tid == 0 {
                            chain.main_thread()
                        } else {
                            chain.root_thread(ev.tid)
                        };
                        self.cxs.insert(ev.tid, cx);
                    }
                    if let Some(cx) = self.cxs.get_mut(&ev.tid) {
                        chain.deliver(cx, &ev.as_event());
                    }
                }
            }
        }
    }
}

/// How [`analyze_stream`] runs: reading and analysis on the calling thread, or the
/// reader's lexing side ([`crate::trace::StdLexer`]: lines split and lexed) on a thread
/// of its own, handing batches of lexed lines over a bounded channel to the calling
/// thread, which parses them into events (names, well-formedness) and analyses them,
/// so that the two overlap and split the reader's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Single,
    Pipelined,
}

/// Events per batch handed from the reader to the analysis.
pub const BATCH: usize = 16384;
/// Lines per batch handed from the reading side to the parsing side.
const LEX_BATCH: usize = 8192;
/// Batches in flight between the two sides (the memory bound of the pipeline: about
/// `BATCH * (QUEUE + 2)` events, or `LEX_BATCH * (QUEUE + 2)` lines).
const QUEUE: usize = 4;
/// Batches waiting for the analysis thread from which the reading thread parses too
/// (see [`run_pipelined`]).
const BEHIND: usize = 1;

/// A finished streaming run: the chain (warnings, statistics), the trace's names and
/// the throughput.
pub struct Streamed {
    pub chain: Chain,
    pub env: Arc<TraceEnv>,
    /// Events of the file (not counting the thread starts and ends the reader inserted).
    pub events: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Wall time of the whole run (reading and analysis).
    pub seconds: f64,
}

/// Why a streaming run failed.
#[derive(Debug)]
pub enum StreamError {
    /// A malformed line, or the input could not be read (never
    /// [`ReadError::Renumber`], which [`analyze_stream`] handles).
    Read(ReadError),
    /// The chain could not be built (`--tools`).
    Chain(ChainError),
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::Read(e) => write!(f, "{e}"),
            StreamError::Chain(e) => write!(f, "{e}"),
        }
    }
}

/// The analysis side of a run: builds the chain when the first events arrive (the
/// trace's headers, which come first, are read by then: `options` sees them).
struct Consumer<'a> {
    env: Arc<TraceEnv>,
    spec: &'a str,
    options: &'a dyn Fn(&TraceEnv) -> ChainOptions,
    chain: Option<Chain>,
    runner: Runner,
}

impl Consumer<'_> {
    fn chain(&mut self) -> Result<&Chain, ChainError> {
        if self.chain.is_none() {
            let env: Arc<dyn crate::env::Env> = self.env.clone();
            let options = (self.options)(&self.env);
            self.chain = Some(crate::passes::chain(self.spec, env, options)?);
        }
        Ok(self.chain.as_ref().expect("built above"))
    }
    fn consume(&mut self, events: &[OwnedEvent]) -> Result<(), ChainError> {
        if events.is_empty() {
            return Ok(());
        }
        self.chain()?;
        let Consumer { chain, runner, .. } = self;
        if let Some(chain) = chain {
            runner.run(chain, events);
        }
        Ok(())
    }
    fn finish(mut self) -> Result<Chain, ChainError> {
        self.chain()?;
        let chain = self.chain.take().expect("built above");
        chain.finish();
        Ok(chain)
    }
}

/// Read the STD trace `input` and run the chain `chain_spec` over its events as they
/// are read, holding only a few batches of them ([`BATCH`]): memory is the analysis
/// state plus the names, whatever the trace's length. `options` gets the trace's
/// names once its headers are read (`capvm analyze` folds by location unless the
/// trace was recorded by capvm). Both modes give the same chain: the same events in
/// the same order, the same names, the same first error.
pub fn analyze_stream(
    input: TraceInput<'_>,
    chain_spec: &str,
    options: &dyn Fn(&TraceEnv) -> ChainOptions,
    mode: Mode,
) -> Result<Streamed, StreamError> {
    // Unknown analyses are reported before the trace is read.
    let spec = chain_spec.trim();
    if !(spec.is_empty() || spec == "none") {
        for name in spec.split(':').map(str::trim) {
            if !crate::passes::NAMES.contains(&name) {
                return Err(StreamError::Chain(ChainError(format!(
                    "unknown analysis `{name}` (known: {})",
                    crate::passes::NAMES.join(", ")
                ))));
            }
            if let Some(e) = offline_refusal(name) {
                return Err(StreamError::Chain(e));
            }
        }
    }
    let start = Instant::now();
    let open_err = |error| StreamError::Read(ReadError::Io { line: 0, error });
    let renumber = |e: &StreamError| matches!(e, StreamError::Read(ReadError::Renumber));
    let run = |reader, env: Arc<TraceEnv>| {
        let consumer = Consumer {
            env: env.clone(),
            spec: chain_spec,
            options,
            chain: None,
            runner: Runner::default(),
        };
        let (chain, events, bytes) = match mode {
            Mode::Single => run_single(reader, consumer),
            Mode::Pipelined => run_pipelined(reader, consumer),
        }?;
        Ok(Streamed {
            chain,
            env,
            events,
            bytes,
            seconds: start.elapsed().as_secs_f64(),
        })
    };
    read_renumbering(|| input.open(), open_err, renumber, run)
}

type Run = Result<(Chain, u64, u64), StreamError>;

fn run_single<R: std::io::Read>(mut reader: StdReader<R>, mut consumer: Consumer<'_>) -> Run {
    let mut batch = Vec::with_capacity(BATCH + 16);
    loop {
        batch.clear();
        let more = reader
            .read_batch(&mut batch, BATCH)
            .map_err(StreamError::Read)?;
        consumer.consume(&batch).map_err(StreamError::Chain)?;
        if !more {
            break;
        }
    }
    let chain = consumer.finish().map_err(StreamError::Chain)?;
    Ok((chain, reader.events(), reader.bytes()))
}

/// Who parses a lexed batch in a pipelined run (see [`run_pipelined`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Balance {
    /// The reading thread, once this many batches wait for the analysis thread (0:
    /// always; `usize::MAX`: never).
    Behind(usize),
    /// The reading thread every other batch (tests: the two sides take turns).
    Alternate,
}

#[cfg(feature = "testing")]
thread_local! {
    static BALANCE_FOR_TESTS: std::cell::Cell<Option<(Balance, usize)>> = const { std::cell::Cell::new(None) };
}

/// `Behind(`[`BEHIND`]`)` and [`LEX_BATCH`] lines per batch, or what [`with_balance`]
/// set on this thread.
fn balance() -> (Balance, usize) {
    #[cfg(feature = "testing")]
    if let Some(b) = BALANCE_FOR_TESTS.with(|b| b.get()) {
        return b;
    }
    (Balance::Behind(BEHIND), LEX_BATCH)
}

/// Run `f` with the pipelined runs it starts on this thread balanced by `balance`,
/// in batches of `lines` lines (at least 1), so that tests can pin every way of
/// splitting the parsing, also on short inputs.
#[cfg(feature = "testing")]
pub fn with_balance<T>(balance: Balance, lines: usize, f: impl FnOnce() -> T) -> T {
    let old = BALANCE_FOR_TESTS.with(|b| b.replace(Some((balance, lines.max(1)))));
    let out = f();
    BALANCE_FOR_TESTS.with(|b| b.set(old));
    out
}

/// Lexed batches handed to the analysis thread and not yet parsed there.
#[derive(Default)]
struct Unparsed {
    count: Mutex<usize>,
    none: Condvar,
}

impl Unparsed {
    fn add(&self) {
        *self.count.lock() += 1;
    }
    fn parsed(&self) {
        let mut n = self.count.lock();
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.none.notify_all();
        }
    }
    fn wait_for_none(&self) {
        let mut n = self.count.lock();
        while *n > 0 {
            self.none.wait(&mut n);
        }
    }
}

/// Lets the reading thread go on when the analysis thread stops (its batches will
/// never be parsed).
struct ReleaseOnDrop<'a>(&'a Unparsed);

impl Drop for ReleaseOnDrop<'_> {
    fn drop(&mut self) {
        *self.0.count.lock() = 0;
        self.0.none.notify_all();
    }
}

/// What the reading thread hands over: lexed lines for the analysis thread to parse,
/// or lines it parsed itself (with whether more may follow, or the error that ended
/// the trace).
enum Handed {
    Lexed(Lexed),
    Parsed(Result<(Vec<OwnedEvent>, bool), ReadError>),
}

/// The pipeline balances itself: the reading thread lexes every batch, and parses it
/// too when the analysis thread is behind (at least [`BEHIND`] batches wait for it),
/// after waiting until that thread has parsed every lexed batch handed to it before;
/// otherwise it hands the batch over lexed and the analysis thread parses it. One
/// parser behind a mutex serves both, so it sees the batches in file order. A light
/// chain (`none`) gets the parsing on its otherwise idle thread, a heavy one leaves it
/// to the reading thread.
fn run_pipelined<R: std::io::Read + Send>(reader: StdReader<R>, mut consumer: Consumer<'_>) -> Run {
    let (balance, lines) = balance();
    let (mut lexer, parser) = reader.split();
    let parser = Mutex::new(parser);
    let unparsed = Unparsed::default();
    let (full_tx, full_rx) = crossbeam_channel::bounded::<Handed>(QUEUE);
    let (lexed_tx, lexed_rx) = crossbeam_channel::bounded::<Lexed>(QUEUE + 2);
    let (events_tx, events_rx) = crossbeam_channel::bounded::<Vec<OwnedEvent>>(QUEUE + 2);
    std::thread::scope(|scope| {
        let (parser, unparsed) = (&parser, &unparsed);
        let producer = scope.spawn(move || {
            let mut spare = Lexed::default();
            for batch in 0usize.. {
                let mut lexed = lexed_rx
                    .try_recv()
                    .unwrap_or_else(|_| std::mem::take(&mut spare));
                let more = lexer.lex(&mut lexed, lines);
                let parse_here = match balance {
                    Balance::Behind(b) => full_tx.len() >= b,
                    Balance::Alternate => batch % 2 == 1,
                };
                let handed = if parse_here {
                    unparsed.wait_for_none();
                    let mut events = events_rx
                        .try_recv()
                        .unwrap_or_else(|_| Vec::with_capacity(LEX_BATCH + 64));
                    events.clear();
                    let parsed = parser.lock().parse(&mut lexed, &mut events);
                    spare = lexed;
                    Handed::Parsed(parsed.map(|more| (events, more)))
                } else {
                    unparsed.add();
                    Handed::Lexed(lexed)
                };
                let last = !more || matches!(handed, Handed::Parsed(Err(_) | Ok((_, false))));
                if full_tx.send(handed).is_err() || last {
                    break;
                }
            }
            lexer.bytes()
        });
        // However this side stops, the reading thread must not wait for it.
        let release = ReleaseOnDrop(unparsed);
        let mut failed = None;
        let mut own = Vec::with_capacity(LEX_BATCH + 64);
        for handed in full_rx.iter() {
            let (events, parsed) = match handed {
                Handed::Lexed(mut lexed) => {
                    own.clear();
                    let parsed = parser.lock().parse(&mut lexed, &mut own);
                    unparsed.parsed();
                    let _ = lexed_tx.try_send(lexed);
                    (std::mem::take(&mut own), parsed)
                }
                Handed::Parsed(Ok((events, more))) => (events, Ok(more)),
                Handed::Parsed(Err(e)) => (Vec::new(), Err(e)),
            };
            let consumed = consumer.consume(&events);
            // The vector goes back to whichever side parses next.
            if own.capacity() == 0 {
                own = events;
            } else {
                let _ = events_tx.try_send(events);
            }
            if let Err(e) = consumed {
                failed = Some(StreamError::Chain(e));
                break;
            }
            match parsed {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    failed = Some(StreamError::Read(e));
                    break;
                }
            }
        }
        // Unblock the reader if it is waiting to hand over a batch or for a parse.
        drop(full_rx);
        drop(release);
        let bytes = producer.join();
        if let Some(e) = failed {
            return Err(e);
        }
        let bytes = bytes.unwrap_or_else(|p| std::panic::resume_unwind(p));
        let events = parser.lock().events();
        let chain = consumer.finish().map_err(StreamError::Chain)?;
        Ok((chain, events, bytes))
    })
}
