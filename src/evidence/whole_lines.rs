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
mod tests {
    use super::*;

    /// Takes at most `step` bytes per call, fails once it has taken `limit` bytes, and counts
    /// its calls.
    struct Limited {
        out: Vec<u8>,
        step: usize,
        limit: usize,
        calls: usize,
        interrupt_first: bool,
    }

    impl Write for Limited {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            self.calls += 1;
            if std::mem::take(&mut self.interrupt_first) {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let room = self.limit - self.out.len();
            if room == 0 {
                return Err(io::Error::other("full"));
            }
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.step - n).min(room - n);
                self.out.extend_from_slice(&b[..take]);
                n += take;
                if n == self.step || n == room {
                    break;
                }
            }
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn sink(step: usize, limit: usize) -> Limited {
        Limited {
            out: Vec::new(),
            step,
            limit,
            calls: 0,
            interrupt_first: false,
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
        let mut w = sink(usize::MAX / 2, usize::MAX / 2);
        write_lines(&mut w, &refs).unwrap();
        assert_eq!(w.out, owned.concat());
        assert_eq!(w.calls, 1);
    }

    #[test]
    fn short_writes_and_interruptions_are_continued_where_they_stopped() {
        let owned = lines();
        let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        for step in [1, 2, 3, 7, 64, 100, 1000] {
            let mut w = sink(step, usize::MAX / 2);
            w.interrupt_first = true;
            write_lines(&mut w, &refs).unwrap();
            assert_eq!(w.out, owned.concat(), "step {step}");
        }
    }

    #[test]
    fn a_failure_counts_exactly_the_lines_written_whole_before_it() {
        let owned = lines();
        let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let total: usize = owned.iter().map(Vec::len).sum();
        for limit in 0..total {
            for step in [5, 333, usize::MAX / 2] {
                let mut w = sink(step, limit);
                let (done, e) = write_lines(&mut w, &refs).unwrap_err();
                assert_eq!(e.to_string(), "full");
                // The bytes are those a write per line would have left: the lines before the
                // cut whole, then the cut line's head.
                assert_eq!(w.out, owned.concat()[..limit]);
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
        let mut w = sink(10, 10);
        write_lines(&mut w, &[]).unwrap();
        assert_eq!(w.calls, 0);
    }
}
