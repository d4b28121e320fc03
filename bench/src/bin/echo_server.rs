//! A fast native MCP echo server for the benchmarks: answers every line that carries an `"id":`
//! with a small `tools/call` result for that id, and ignores lines without one (notifications).
//! Output is buffered and flushed whenever its input runs dry, like a real server would.

use std::io::{self, BufRead, BufReader, BufWriter, Write};

fn main() -> io::Result<()> {
    let mut input = BufReader::with_capacity(64 * 1024, io::stdin().lock());
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        if input.buffer().is_empty() {
            // About to block (or at EOF): hand over what we have.
            out.flush()?;
        }
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if let Some(id) = find_id(&line) {
            out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
            out.write_all(id)?;
            out.write_all(b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"isError\":false}}\n")?;
        }
    }
    out.flush()
}

/// The raw id text after `"id":` up to the next `,` or `}` (the bench client writes simple ids).
fn find_id(line: &[u8]) -> Option<&[u8]> {
    let key = b"\"id\":";
    let at = line.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &line[at..];
    let end = rest.iter().position(|b| *b == b',' || *b == b'}')?;
    Some(&rest[..end])
}
