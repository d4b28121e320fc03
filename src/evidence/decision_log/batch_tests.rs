//! Lines written together ([`DecisionLog::write_lines`], a pipelining client's batch) against
//! one write per line, through a file that a size limit cuts ([`SizeLimited`]).

use super::tests::entry;
use super::*;
use crate::evidence::whole_lines::tests::SizeLimited;
use proptest::prelude::*;

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
        let each_file = SizeLimited::new(step, limit);
        let one = each_file.out.clone();
        let mut each = DecisionLog::new(Box::new(each_file));
        for line in &lines {
            each.write(line);
        }
        let together_file = SizeLimited::new(step, limit);
        let together_out = together_file.out.clone();
        let mut together = DecisionLog::new(Box::new(together_file));
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
