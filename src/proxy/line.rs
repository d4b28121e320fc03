//! A bounded, cancellable line reader: yields lines (bytes up to and including `\n`) and refuses
//! to buffer more than `max_line_bytes` of one line, so memory stays bounded whatever the peer
//! sends (the model is ripgrep's `LineBuffer` heap limit).

use std::io::{self, Read};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::cancel::Cancel;

const READ_CHUNK: usize = 64 * 1024;

/// The buffer a reader starts with. A peer with one message in flight never needs more; a read
/// that fills the buffer doubles it (up to [`READ_CHUNK`]), so pipelined input soon reads in
/// 64 KiB chunks. Zeroing 64 KiB up front cost every session 16 page faults per reader at
/// start-up (docs/decisions.md, "Start-up and size").
const FIRST_CHUNK: usize = 4 * 1024;

/// A buffer of `size` bytes for lines of at most `max` bytes: no more than one bound-sized line
/// plus its newline needs, and at least 1 KiB.
fn sized(size: usize, max: usize) -> usize {
    size.min(max.saturating_add(1)).max(1024)
}

/// Why no line could be produced.
#[derive(Debug)]
pub(crate) enum LineError {
    /// A line (newline included) longer than the bound.
    TooLong,
    /// The session cancelled this reader.
    Cancelled,
    /// A read or idle-callback error.
    Io(io::Error),
}

/// What [`LineReader::next_item`] read.
#[derive(Debug)]
pub(crate) enum Item<'a> {
    /// A line as [`LineReader::next_line`] yields it.
    Line(&'a [u8]),
    /// A line longer than the streaming limit, handed to the caller in pieces and not kept.
    Long(Long),
}

/// A line that was streamed past ([`LineReader::streaming_past`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Long {
    /// Its length without the terminator (`\n`, or `\r\n`).
    pub bytes: u64,
    /// It ended at the end of input, without a `\n`.
    pub last: bool,
}

/// What a reader that streams long lines ([`LineReader::streaming_past`]) asks of its caller.
pub(crate) trait Past {
    /// A line just passed the streaming limit but not the bound: stream it (`true`), or keep it
    /// whole like any line up to the bound (`false`). Asked at most once per line.
    fn may_stream(&mut self) -> bool;
    /// The next piece of a line being streamed.
    fn piece(&mut self, bytes: &[u8]);
}

pub(crate) struct LineReader<R> {
    src: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Where the search for `\n` resumes (everything in start..scan has no newline).
    scan: usize,
    /// The last read filled all the room it was given: more input is probably waiting.
    filled: bool,
    max: usize,
    eof: bool,
    cancel: Cancel,
    /// Counts the bytes read (the session watches the server's output for activity).
    activity: Option<Arc<AtomicU64>>,
    /// Lines longer than this (terminator excluded) may be streamed by [`Self::next_item`].
    stream_past: Option<usize>,
    /// The line being read passed the streaming limit and is kept ([`Past::may_stream`] said
    /// so): it is streamed only if it passes the bound too.
    keeping: bool,
    /// `idle` runs only before a read that would block ([`Self::idle_only_before_blocking`]).
    idle_only_before_blocking: bool,
}

impl<R: Read + AsFd> LineReader<R> {
    pub(crate) fn new(src: R, max: usize, cancel: Cancel) -> Self {
        Self {
            src,
            buf: vec![0; sized(FIRST_CHUNK, max)],
            start: 0,
            end: 0,
            scan: 0,
            filled: false,
            max,
            eof: false,
            cancel,
            activity: None,
            stream_past: None,
            keeping: false,
            idle_only_before_blocking: false,
        }
    }

    /// `idle` runs only before a read that would block: after a read that filled its room
    /// (more input is probably waiting), the reader first looks whether input is there (one
    /// `poll` with no timeout) and reads it without running `idle`. Whatever `idle` flushes or
    /// hands off waits no longer than the input already there takes to read; it is never left
    /// behind a read that blocks. Without this, `idle` runs before every read.
    pub(crate) fn idle_only_before_blocking(mut self) -> Self {
        self.idle_only_before_blocking = true;
        self
    }

    /// [`Self::next_item`] streams a line longer than `limit` bytes (terminator excluded) that
    /// its caller lets it stream ([`Past::may_stream`]), and every line longer than the bound,
    /// instead of keeping it (never [`LineError::TooLong`]): a streamed line costs no more than
    /// about twice the smaller of the two in buffer; a line kept, no more than without a limit.
    pub(crate) fn streaming_past(mut self, limit: usize) -> Self {
        self.stream_past = Some(limit);
        self
    }

    /// Counts every byte read into `counter`.
    pub(crate) fn with_activity(mut self, counter: Arc<AtomicU64>) -> Self {
        self.activity = Some(counter);
        self
    }

    /// The next line. A final line without `\n` at end of input is returned as is. `idle` runs
    /// before the reader reads more input, or only before a read that would block
    /// ([`Self::idle_only_before_blocking`]): the caller flushes its writers there.
    pub(crate) fn next_line(
        &mut self,
        idle: &mut dyn FnMut() -> io::Result<()>,
    ) -> Result<Option<&[u8]>, LineError> {
        loop {
            if let Some(i) = self.next_newline() {
                let line_start = self.start;
                let line_end = self.scan + i + 1;
                self.start = line_end;
                self.scan = line_end;
                if line_end - line_start > self.max {
                    return Err(LineError::TooLong);
                }
                return Ok(Some(&self.buf[line_start..line_end]));
            }
            self.scan = self.end;
            if self.end - self.start > self.max {
                return Err(LineError::TooLong);
            }
            if self.eof {
                if self.start < self.end {
                    let s = self.start;
                    self.start = self.end;
                    return Ok(Some(&self.buf[s..self.end]));
                }
                return Ok(None);
            }
            self.make_room();
            self.fill(idle)?;
        }
    }

    /// Where the next `\n` is in the bytes not yet looked at, relative to `scan`. Nothing to look
    /// at is not searched: the first search of a process sets up `memchr`'s choice of vector
    /// instructions (a dozen `CPUID`s, ~7.5 µs each on a virtual machine), which a session that
    /// ends before its first byte never needs (docs/decisions.md, "Start-up and shutdown
    /// without sleeps").
    fn next_newline(&self) -> Option<usize> {
        let rest = &self.buf[self.scan..self.end];
        if rest.is_empty() {
            return None;
        }
        memchr::memchr(b'\n', rest)
    }

    /// Waits for input (running `idle` first, unless input is known to be there:
    /// [`Self::idle_only_before_blocking`]) and reads what there is after `end`.
    fn fill(&mut self, idle: &mut dyn FnMut() -> io::Result<()>) -> Result<(), LineError> {
        // After a read that filled its room, input is probably waiting: if it is, the read below
        // does not block, and `idle` waits for one that would.
        let now = if self.idle_only_before_blocking && self.filled {
            self.cancel
                .readable_now(self.src.as_fd())
                .map_err(LineError::Io)?
        } else {
            None
        };
        let ready = match now {
            Some(ready) => ready,
            None => {
                idle().map_err(LineError::Io)?;
                self.cancel
                    .wait_readable(self.src.as_fd())
                    .map_err(LineError::Io)?
            }
        };
        if !ready {
            return Err(LineError::Cancelled);
        }
        let room = self.buf.len() - self.end;
        match self.src.read(&mut self.buf[self.end..]) {
            Ok(0) => self.eof = true,
            Ok(n) => {
                self.filled = n == room;
                self.end += n;
                if let Some(a) = &self.activity {
                    a.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
            // A non-blocking source with nothing there after all: wait again.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) => {}
            Err(e) => return Err(LineError::Io(e)),
        }
        Ok(())
    }

    /// The next line, or, when the reader streams long lines ([`Self::streaming_past`]), a
    /// line longer than the limit that `past` lets it stream, or longer than the bound, handed
    /// to `past` in pieces (terminator excluded, a `\r` before the `\n` included) as it is read,
    /// and never kept whole. Without a limit, exactly [`Self::next_line`].
    pub(crate) fn next_item(
        &mut self,
        idle: &mut dyn FnMut() -> io::Result<()>,
        past: &mut dyn Past,
    ) -> Result<Option<Item<'_>>, LineError> {
        let Some(limit) = self.stream_past else {
            return Ok(self.next_line(idle)?.map(Item::Line));
        };
        loop {
            if let Some(i) = self.next_newline() {
                let (line_start, line_end) = (self.start, self.scan + i + 1);
                self.start = line_end;
                self.scan = line_end;
                let line = &self.buf[line_start..line_end];
                let body = crate::results::without_terminator(line).len();
                let keeping = std::mem::take(&mut self.keeping);
                // Streaming, a line longer than the bound is streamed too (never an error).
                if line.len() > self.max || (body > limit && !keeping && past.may_stream()) {
                    past.piece(&line[..line.len() - 1]);
                    let bytes = body as u64;
                    return Ok(Some(Item::Long(Long { bytes, last: false })));
                }
                return Ok(Some(Item::Line(&self.buf[line_start..line_end])));
            }
            self.scan = self.end;
            // Past the limit even if the next byte ends the line after a `\r`.
            let partial = self.end - self.start;
            if partial > self.max
                || (partial > limit.saturating_add(1) && !self.keeping && self.decide(past))
            {
                self.keeping = false;
                return self.stream_rest(idle, past).map(|l| Some(Item::Long(l)));
            }
            if self.eof {
                let keeping = std::mem::take(&mut self.keeping);
                if self.start < self.end {
                    let (s, e) = (self.start, self.end);
                    self.start = self.end;
                    let body = crate::results::without_terminator(&self.buf[s..e]).len();
                    if e - s > self.max || (body > limit && !keeping && past.may_stream()) {
                        past.piece(&self.buf[s..e]);
                        let bytes = body as u64;
                        return Ok(Some(Item::Long(Long { bytes, last: true })));
                    }
                    return Ok(Some(Item::Line(&self.buf[s..e])));
                }
                return Ok(None);
            }
            self.make_room();
            self.fill(idle)?;
        }
    }

    /// Asks `past` whether the line that just passed the limit is streamed; remembers a no.
    fn decide(&mut self, past: &mut dyn Past) -> bool {
        let stream = past.may_stream();
        self.keeping = !stream;
        stream
    }

    /// Hands the partial line in the buffer and the rest of it, up to its `\n` or the end of
    /// input, to `long`, reusing the buffer for each read; what follows the `\n` stays.
    fn stream_rest(
        &mut self,
        idle: &mut dyn FnMut() -> io::Result<()>,
        past: &mut dyn Past,
    ) -> Result<Long, LineError> {
        let mut bytes = 0u64;
        let mut cr = false;
        let mut hand = |piece: &[u8], bytes: &mut u64, cr: &mut bool| {
            if let Some(&b) = piece.last() {
                *cr = b == b'\r';
            }
            *bytes += piece.len() as u64;
            past.piece(piece);
        };
        hand(&self.buf[self.start..self.end], &mut bytes, &mut cr);
        (self.start, self.end, self.scan) = (0, 0, 0);
        loop {
            if self.eof {
                let bytes = bytes - u64::from(cr);
                return Ok(Long { bytes, last: true });
            }
            self.fill(idle)?;
            if let Some(i) = memchr::memchr(b'\n', &self.buf[..self.end]) {
                hand(&self.buf[..i], &mut bytes, &mut cr);
                (self.start, self.scan) = (i + 1, i + 1);
                let bytes = bytes - u64::from(cr);
                return Ok(Long { bytes, last: false });
            }
            hand(&self.buf[..self.end], &mut bytes, &mut cr);
            self.end = 0;
        }
    }

    /// Moves the pending partial line to the front and grows the buffer: up to the bound plus one
    /// read when a partial line fills it, up to [`READ_CHUNK`] (or the bound plus one, if
    /// smaller) when the last read filled it.
    fn make_room(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            self.scan = 0;
        } else if self.start > 0 && self.buf.len() - self.end < READ_CHUNK / 4 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scan -= self.start;
            self.start = 0;
        }
        let full = self.end == self.buf.len();
        // What pipelined reads grow the buffer to: one chunk, or the bound plus one if smaller
        // (the size a reader used to start with).
        let chunk = sized(READ_CHUNK, self.max);
        if full || (self.filled && self.buf.len() < chunk) {
            // Never grow past what one over-long line needs to be detected.
            let cap = if full {
                self.max.saturating_add(1).saturating_add(READ_CHUNK)
            } else {
                chunk
            };
            let new_len = self.buf.len().saturating_mul(2).min(cap).max(self.end + 1);
            self.buf.resize(new_len, 0);
            self.filled = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `input` (written all at once) to its end or first error: the lines, and the
    /// reader's buffer length at the end.
    fn read_all(input: &[u8], max: usize) -> (Result<Vec<Vec<u8>>, String>, usize) {
        let (r, mut w) = std::io::pipe().unwrap();
        let data = input.to_vec();
        let t = std::thread::spawn(move || {
            use std::io::Write;
            let _ = w.write_all(&data);
        });
        let mut lr = LineReader::new(r, max, Cancel::new().unwrap());
        let mut out = Vec::new();
        let res = loop {
            match lr.next_line(&mut || Ok(())) {
                Ok(Some(l)) => out.push(l.to_vec()),
                Ok(None) => break Ok(out),
                Err(LineError::TooLong) => break Err("too long".to_string()),
                Err(e) => break Err(format!("{e:?}")),
            }
        };
        let len = lr.buf.len();
        drop(lr);
        t.join().unwrap();
        (res, len)
    }

    fn lines(input: &[u8], max: usize) -> Result<Vec<Vec<u8>>, String> {
        read_all(input, max).0
    }

    #[test]
    fn splits_lines_and_keeps_a_final_partial_line() {
        let got = lines(b"a\nbb\n\nccc", 100).unwrap();
        assert_eq!(
            got,
            vec![
                b"a\n".to_vec(),
                b"bb\n".to_vec(),
                b"\n".to_vec(),
                b"ccc".to_vec()
            ]
        );
    }

    #[test]
    fn bound_includes_the_newline_and_is_inclusive() {
        assert!(lines(b"abcd\n", 5).is_ok());
        assert_eq!(lines(b"abcde\n", 5).unwrap_err(), "too long");
        assert_eq!(lines(b"abcdef", 5).unwrap_err(), "too long");
        // A huge line without newline is refused without buffering it all.
        let big = vec![b'x'; 10 * 1024 * 1024];
        assert_eq!(lines(&big, 1000).unwrap_err(), "too long");
    }

    /// Reads every line of `input` and returns the buffer's final length.
    fn buffer_after(input: Vec<u8>, max: usize) -> usize {
        let (got, len) = read_all(&input, max);
        assert_eq!(got.unwrap().concat(), input);
        len
    }

    #[test]
    fn the_buffer_starts_small_and_grows_for_pipelined_input() {
        // One message in flight: the first page is all a reader ever zeroes.
        assert_eq!(buffer_after(b"{\"id\":1}\n".to_vec(), 1 << 20), FIRST_CHUNK);
        // A megabyte of short lines at once: reads fill the buffer, which doubles to a full
        // chunk and no further.
        let many = b"{\"jsonrpc\":\"2.0\",\"id\":1}\n".repeat(40_000);
        assert_eq!(buffer_after(many, 1 << 20), READ_CHUNK);
        // A small bound keeps its small buffer (bound plus one, at least 1 KiB) for short lines,
        // pipelined or not.
        assert_eq!(buffer_after(b"ab\n".to_vec(), 100), 1024);
        let short = b"{\"id\":1}\n".repeat(40_000);
        assert_eq!(buffer_after(short, 2000), 2001);
    }

    #[test]
    fn long_lines_across_reads() {
        let mut input = Vec::new();
        for i in 0..50 {
            input.extend(std::iter::repeat_n(
                b'a' + (i % 26) as u8,
                100_000 + i as usize,
            ));
            input.push(b'\n');
        }
        let got = lines(&input, 200_000).unwrap();
        assert_eq!(got.len(), 50);
        assert_eq!(got.concat(), input);
    }

    /// Reads every line of `src` with a reader that runs `idle` only before blocking; returns
    /// the bytes read and how many times `idle` ran. `on_idle` is told how many lines were read
    /// by then.
    fn read_counting_idle<R: std::io::Read + AsFd>(
        src: R,
        on_idle: impl Fn(usize),
    ) -> (Vec<u8>, usize) {
        let mut lr =
            LineReader::new(src, 1 << 20, Cancel::new().unwrap()).idle_only_before_blocking();
        let (lines, idles) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        let mut idle = || {
            idles.set(idles.get() + 1);
            on_idle(lines.get());
            Ok(())
        };
        let mut out = Vec::new();
        while let Some(l) = lr.next_line(&mut idle).unwrap() {
            out.extend_from_slice(l);
            lines.set(lines.get() + 1);
        }
        (out, idles.get())
    }

    #[test]
    fn idle_does_not_run_while_input_is_waiting() {
        // A regular file is always readable: after the buffer has grown to a full chunk, no
        // read runs `idle` until the one that finds the end of input (a read that does not
        // fill its room).
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":1}\n".repeat(100_000);
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &input).unwrap();
        std::io::Seek::rewind(&mut file).unwrap();
        let (got, idles) = read_counting_idle(file, |_| {});
        assert_eq!(got, input);
        let reads = input.len() / READ_CHUNK;
        assert!(reads > 30, "{reads} reads");
        // The first read, one per doubling of the buffer (4 KiB to 64 KiB), the last ones.
        assert!(idles <= 8, "idle ran {idles} times over {reads} full reads");
    }

    #[test]
    fn idle_runs_before_every_read_that_would_block() {
        // 16-byte lines fill the reader's power-of-two buffer exactly, so the last read of
        // what the writer sent first fills its room (more input looks likely): the reader must
        // still see that none is there and run `idle` before it blocks. The writer sends the
        // rest only once `idle` ran after the last line of the first part: a reader that
        // blocked without running `idle` would never see it (the writer gives up after a
        // minute, and the test fails).
        let (r, mut w) = std::io::pipe().unwrap();
        // The whole first part fits in the pipe: every read finds what it asks for.
        let size = nix::fcntl::fcntl(&w, nix::fcntl::FcntlArg::F_SETPIPE_SZ(1 << 20)).unwrap();
        let line = [[b'x'; 15].as_slice(), b"\n"].concat();
        // The reads while the buffer grows (4 + 8 + 16 + 32 KiB), then three full chunks.
        let lines = (60 * 1024 + 3 * READ_CHUNK) / line.len();
        let first = line.repeat(lines);
        assert!(first.len() <= size as usize);
        let rest = b"{\"id\":2}\n".repeat(10);
        std::io::Write::write_all(&mut w, &first).unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let b = rest.clone();
        let writer = std::thread::spawn(move || {
            let asked = rx.recv_timeout(std::time::Duration::from_secs(60)).is_ok();
            std::io::Write::write_all(&mut w, &b).unwrap();
            asked
        });
        let (got, idles) = read_counting_idle(r, |read| {
            if read == lines {
                let _ = tx.send(());
            }
        });
        assert!(
            writer.join().unwrap(),
            "the reader blocked without running idle"
        );
        assert_eq!(got, [first, rest].concat());
        assert!(idles >= 2, "idle ran {idles} times");
    }
}

#[cfg(test)]
mod streaming_tests {
    use super::*;

    /// Reads `input` with lines over `limit` streamed: each item as (kept line or streamed
    /// bytes, streamed length, last), and the buffer's final length.
    /// A kept line, or the bytes of a streamed one with what the reader said of it.
    type Read = (Vec<u8>, Option<Long>);

    /// A caller that lets lines stream as `stream` says, and collects the pieces.
    struct Caller {
        stream: bool,
        asked: usize,
        streamed: Vec<u8>,
    }

    impl Past for Caller {
        fn may_stream(&mut self) -> bool {
            self.asked += 1;
            self.stream
        }
        fn piece(&mut self, bytes: &[u8]) {
            self.streamed.extend_from_slice(bytes);
        }
    }

    fn items(input: &[u8], max: usize, limit: usize) -> (Vec<Read>, usize) {
        let (got, len, _) = items_when(input, max, limit, true);
        (got, len)
    }

    /// [`items`] with a caller that lets lines over the limit stream (`stream`) or not; also
    /// how many times it was asked.
    fn items_when(
        input: &[u8],
        max: usize,
        limit: usize,
        stream: bool,
    ) -> (Vec<Read>, usize, usize) {
        let (r, mut w) = std::io::pipe().unwrap();
        let data = input.to_vec();
        let t = std::thread::spawn(move || {
            use std::io::Write;
            let _ = w.write_all(&data);
        });
        let mut lr = LineReader::new(r, max, Cancel::new().unwrap()).streaming_past(limit);
        let mut out = Vec::new();
        let mut asked = 0;
        loop {
            let mut caller = Caller {
                stream,
                asked: 0,
                streamed: Vec::new(),
            };
            let item = lr.next_item(&mut || Ok(()), &mut caller);
            match item {
                Ok(Some(Item::Line(l))) => out.push((l.to_vec(), None)),
                Ok(Some(Item::Long(long))) => out.push((caller.streamed.clone(), Some(long))),
                Ok(None) => break,
                Err(e) => panic!("{e:?}"),
            }
            assert!(caller.asked <= 1, "asked once per line");
            asked += caller.asked;
        }
        let len = lr.buf.len();
        drop(lr);
        t.join().unwrap();
        (out, len, asked)
    }

    #[test]
    fn a_line_the_caller_keeps_is_kept_up_to_the_bound_and_streamed_past_it() {
        let input = b"abcd\nabcdefgh\nab\nabcdefghijkl\nxyzxyz";
        let (got, _, asked) = items_when(input, 10, 4, false);
        let long = |bytes, last| Some(Long { bytes, last });
        assert_eq!(
            got,
            vec![
                (b"abcd\n".to_vec(), None),
                (b"abcdefgh\n".to_vec(), None),
                (b"ab\n".to_vec(), None),
                (b"abcdefghijkl".to_vec(), long(12, false)),
                (b"xyzxyz".to_vec(), None),
            ]
        );
        // Written at once, read at once: the line over the bound is found whole, never asked.
        assert_eq!(asked, 2, "each line over the limit and within the bound");
        // Far over the limit, kept in pieces that grow the buffer to the bound and no more.
        let mut big = vec![b'x'; 3 << 20];
        big.extend_from_slice(b"\n");
        big.extend_from_slice(&vec![b'y'; 5 << 20]);
        big.extend_from_slice(b"\nok\n");
        let (got, len, asked) = items_when(&big, 4 << 20, 1000, false);
        assert_eq!(got[0].0.len(), (3 << 20) + 1, "kept whole");
        assert_eq!(got[0].1, None);
        assert_eq!(got[1].1, long(5 << 20, false), "streamed past the bound");
        assert_eq!(got[2], (b"ok\n".to_vec(), None));
        assert_eq!(asked, 2);
        assert!(len <= (4 << 20) + 1 + READ_CHUNK, "buffer {len}");
    }

    #[test]
    fn lines_over_the_limit_are_streamed_at_the_exact_bound() {
        let (got, _) = items(b"abcd\nabcde\nab\r\nabc\r\nabcdefg", 100, 4);
        let long = |bytes, last| Some(Long { bytes, last });
        assert_eq!(
            got,
            vec![
                (b"abcd\n".to_vec(), None),
                (b"abcde".to_vec(), long(5, false)),
                (b"ab\r\n".to_vec(), None),
                // Four bytes and a `\r` before the `\n`: at the bound, kept.
                (b"abc\r\n".to_vec(), None),
                (b"abcdefg".to_vec(), long(7, true)),
            ]
        );
    }

    #[test]
    fn a_line_far_over_the_bound_is_streamed_in_bounded_memory() {
        let mut input = vec![b'x'; 8 << 20];
        input.extend_from_slice(b"\r\nnext\n");
        let (got, len) = items(&input, 1 << 20, 1000);
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].1,
            Some(Long {
                bytes: 8 << 20,
                last: false
            })
        );
        assert_eq!(got[0].0.len(), (8 << 20) + 1, "the `\\r` is handed on");
        assert_eq!(got[1], (b"next\n".to_vec(), None));
        assert!(len <= 2 * READ_CHUNK + 2 * 1002, "buffer {len}");
        // Over the bound but not the limit: streamed, never an error.
        let (got, _) = items(&[b'y'; 3000], 2000, 1 << 20);
        assert_eq!(
            got[0].1,
            Some(Long {
                bytes: 3000,
                last: true
            })
        );
    }
}
