//! Consecutive log lines written with as few `write(2)` calls as the kernel takes (`writev`),
//! each line whole (SPEC §4.1: a line is never split over writes of its own, and never
//! interleaves with another), with the count of the lines that were completed when a write
//! fails.
//!
//! A decision log written one `write(2)` per line spends most of its kernel time on each call's
//! fixed cost, not on the bytes (docs/decisions.md, "Decision lines written together"); the
//! lines a pipelining client's batch decided are written in one call instead, before any of
//! their calls is forwarded.

use std::io::{self, IoSlice, Write};

/// Writes `lines`, in order, with vectored writes until every byte is written or a write fails
/// (an interrupted write is retried, as `write_all` does). On failure, returns how many of the
/// lines were written completely (a line cut by the failure is not among them) and the error.
pub(crate) fn write_lines(w: &mut impl Write, lines: &[&[u8]]) -> Result<(), (usize, io::Error)> {
    if let [line] = lines {
        // One line (one request in flight): `write_all`, nothing to gather.
        return w.write_all(line).map_err(|e| (0, e));
    }
    let mut slices: Vec<IoSlice<'_>> = lines.iter().map(|l| IoSlice::new(l)).collect();
    let mut rest: &mut [IoSlice<'_>] = &mut slices;
    // Lines completed, and the bytes written past the last completed line.
    let mut done = 0usize;
    let mut into_next = 0usize;
    loop {
        // Lines of no bytes are complete as they are (a line is never empty; a sink may be
        // given one all the same).
        while lines.get(done).is_some_and(|l| l.len() == into_next) {
            done += 1;
            into_next = 0;
        }
        if done == lines.len() {
            return Ok(());
        }
        match w.write_vectored(rest) {
            Ok(0) => {
                return Err((
                    done,
                    io::Error::new(io::ErrorKind::WriteZero, "failed to write whole buffer"),
                ));
            }
            Ok(mut n) => {
                IoSlice::advance_slices(&mut rest, n);
                while n > 0 {
                    let Some(line) = lines.get(done) else { break };
                    let left = line.len() - into_next;
                    if n < left {
                        into_next += n;
                        n = 0;
                    } else {
                        n -= left;
                        done += 1;
                        into_next = 0;
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((done, e)),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A file as RLIMIT_FSIZE leaves it: takes at most `step` bytes per call (vectored or not),
    /// fails with `EFBIG` once it holds `limit` bytes, and counts its calls. Its bytes are
    /// shared, so they can be read while a decision log owns it.
    pub(crate) struct SizeLimited {
        pub out: Arc<Mutex<Vec<u8>>>,
        step: usize,
        limit: usize,
        calls: usize,
        interrupt_first: bool,
    }

    impl SizeLimited {
        pub(crate) fn new(step: usize, limit: usize) -> Self {
            SizeLimited {
                out: Arc::default(),
                step,
                limit,
                calls: 0,
                interrupt_first: false,
            }
        }

        fn bytes(&self) -> Vec<u8> {
            self.out.lock().unwrap().clone()
        }
    }

    impl Write for SizeLimited {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            self.calls += 1;
            if std::mem::take(&mut self.interrupt_first) {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let mut out = self.out.lock().unwrap();
            let room = self.limit.saturating_sub(out.len()).min(self.step);
            if room == 0 {
                return Err(io::Error::from_raw_os_error(libc::EFBIG));
            }
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(room - n);
                out.extend_from_slice(&b[..take]);
                n += take;
                if n == room {
                    break;
                }
            }
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn lines() -> Vec<Vec<u8>> {
        (0..50)
            .map(|i| format!("{{\"seq\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i * 7)).into_bytes())
            .collect()
    }

    #[test]
    fn every_line_is_written_in_order_with_one_call_when_the_sink_takes_it_all() {
        let owned = lines();
        let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let mut w = SizeLimited::new(usize::MAX, usize::MAX);
        write_lines(&mut w, &refs).unwrap();
        assert_eq!(w.bytes(), owned.concat());
        assert_eq!(w.calls, 1);
    }

    #[test]
    fn short_writes_and_interruptions_are_continued_where_they_stopped() {
        let owned = lines();
        let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        for step in [1, 2, 3, 7, 64, 100, 1000] {
            let mut w = SizeLimited::new(step, usize::MAX);
            w.interrupt_first = true;
            write_lines(&mut w, &refs).unwrap();
            assert_eq!(w.bytes(), owned.concat(), "step {step}");
        }
    }

    #[test]
    fn a_failure_counts_exactly_the_lines_written_whole_before_it() {
        let owned = lines();
        let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let total: usize = owned.iter().map(Vec::len).sum();
        for limit in 0..total {
            for step in [5, 333, usize::MAX] {
                let mut w = SizeLimited::new(step, limit);
                let (done, e) = write_lines(&mut w, &refs).unwrap_err();
                assert_eq!(e.raw_os_error(), Some(libc::EFBIG));
                // The bytes are those a write per line would have left: the lines before the
                // cut whole, then the cut line's head.
                assert_eq!(w.bytes(), owned.concat()[..limit]);
                let whole = owned
                    .iter()
                    .scan(0, |end, l| {
                        *end += l.len();
                        Some(*end)
                    })
                    .take_while(|&end| end <= limit)
                    .count();
                assert_eq!(done, whole, "limit {limit} step {step}");
            }
        }
    }

    #[test]
    fn no_lines_is_no_write() {
        let mut w = SizeLimited::new(10, 10);
        write_lines(&mut w, &[]).unwrap();
        assert_eq!(w.calls, 0);
    }
}
