//! Lines written together ([`DecisionLog::write_lines`], a pipelining client's batch) against
//! one write per line, through a file that a size limit cuts.

use super::tests::entry;
use super::*;
use proptest::prelude::*;
use std::sync::{Arc, Mutex};

/// A file as RLIMIT_FSIZE leaves it: takes at most `step` bytes per write (vectored or not)
/// and fails once `limit` bytes are in it; writes consecutive lines together as a file does.
struct LimitedFile {
    out: Arc<Mutex<Vec<u8>>>,
    limit: usize,
    step: usize,
}

impl Write for LimitedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[io::IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
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

impl DecisionSink for LimitedFile {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.write_all(line)
    }

    fn write_lines(&mut self, lines: &[&[u8]]) -> Result<(), (usize, io::Error)> {
        whole_lines::write_lines(self, lines)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// Lines written together ([`DecisionLog::write_lines`], as a pipelining client's batch is)
    /// leave the same bytes and the same accounting as one write per line, wherever a file
    /// size limit cuts them and however short each write is.
    #[test]
    fn lines_written_together_account_as_one_write_each(
        tools in prop::collection::vec("[a-z_\"\\\\é]{0,40}", 0..40),
        groups in prop::collection::vec(1usize..12, 40),
        limit in 0usize..12_000,
        step in prop::sample::select(vec![1usize, 7, 300, 4096, usize::MAX]),
    ) {
        let mut format = DecisionFormat::new("0123456789abcdef0123456789abcdef", "assay://test", "00", true);
        let lines: Vec<Vec<u8>> = tools
            .iter()
            .enumerate()
            .map(|(seq, tool)| {
                let mut e = entry();
                e.tool = Some(tool);
                let mut line = Vec::new();
                format.push_line(&mut line, seq as u64, &e);
                line
            })
            .collect();
        let one = Arc::new(Mutex::new(Vec::new()));
        let mut each = DecisionLog::new(Box::new(LimitedFile { out: one.clone(), limit, step }));
        for line in &lines {
            each.write(line);
        }
        let together_out = Arc::new(Mutex::new(Vec::new()));
        let mut together =
            DecisionLog::new(Box::new(LimitedFile { out: together_out.clone(), limit, step }));
        let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
        let mut at = 0;
        for g in &groups {
            let end = (at + g).min(refs.len());
            together.write_lines(&refs[at..end]);
            at = end;
        }
        together.write_lines(&refs[at..]);
        prop_assert_eq!(&*together_out.lock().unwrap(), &*one.lock().unwrap());
        prop_assert_eq!(together.accounting(), each.accounting());
    }
}
