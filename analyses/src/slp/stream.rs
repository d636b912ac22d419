//! Compressing a trace as it is read or recorded: [`compress_std`] (`capvm compress`)
//! reads an STD trace on one thread and compresses on another; [`SlpSink`] (`capvm run
//! --record FILE.slp`) takes the STD text the `record` pass writes and compresses it
//! on a thread of its own, so no expanded trace is ever stored.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use crate::offline::{BATCH, Batch, produce};
use crate::trace::{ReadError, StdReader, TraceEnv, TraceInput, reserved_tids};

use super::{Compressor, Grammar, write_slp};

fn compress_reader<R: Read + Send>(
    reader: StdReader<R>,
    env: Arc<TraceEnv>,
) -> Result<Grammar, ReadError> {
    let (tx, rx) = crossbeam_channel::bounded::<Batch>(8);
    let mut reader = reader;
    std::thread::scope(|s| {
        s.spawn(move || produce(&mut reader, &tx, || Vec::with_capacity(BATCH + 16)));
        let mut c = Compressor::new();
        for batch in rx.iter() {
            for e in batch? {
                if e.index != 0 {
                    c.push(&e);
                }
            }
        }
        Ok(c.finish(env))
    })
}

/// Read the STD trace `input` and compress it (reading and compression overlap).
/// Memory: the grammar and a few batches of events.
pub fn compress_std(input: TraceInput<'_>) -> Result<Grammar, ReadError> {
    let open_err = |error| ReadError::Io { line: 0, error };
    let mut reserved = None;
    loop {
        let env = Arc::new(TraceEnv::default());
        let src = input.open().map_err(open_err)?;
        let reader = match reserved.take() {
            None => StdReader::new(src, env.clone()),
            Some(r) => StdReader::with_reserved(src, env.clone(), r),
        };
        match compress_reader(reader, env) {
            Err(ReadError::Renumber) => {
                reserved = Some(reserved_tids(input.open().map_err(open_err)?).map_err(open_err)?);
            }
            r => return r,
        }
    }
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
