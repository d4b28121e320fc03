//! A fast native MCP echo server for the benchmarks: answers every line that carries an `"id":`
//! with a small `tools/call` result for that id, and ignores lines without one (notifications).
//! `initialize` and `tools/list` get real answers (one tool, `echo`), so that `assay mcp pin`
//! can pin it and a pinned session can list it. With `--list-exec` its listing also names a
//! second tool, `exec` (which the bench policies refuse by name, so `hide_refused_tools` rewrites
//! every listing). With `--answer-bytes N` a `tools/call` is answered with a text of N bytes
//! (English prose with escaped line breaks, as a `resources/read` of a document would carry;
//! with `--answer-accented`, French prose naming a token prefix) instead of `ok`: the cost of judging and recording an answer per MiB (SPEC §5.3). Output is
//! buffered and flushed whenever its input runs dry, like a real server would.

use std::io::{self, BufRead, BufReader, BufWriter, Write};

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let list_exec = args.iter().any(|a| a == "--list-exec");
    let long_answer = args
        .iter()
        .position(|a| a == "--answer-bytes")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse::<usize>().ok())
        .map(|n| answer_of(n, args.iter().any(|a| a == "--answer-accented")));
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
            match &long_answer {
                Some(long) if is_call(&line) => out.write_all(long)?,
                _ => out.write_all(result_for(&line, list_exec))?,
            }
        }
    }
    out.flush()
}

/// Whether a request line is a `tools/call`.
fn is_call(line: &[u8]) -> bool {
    let m = b"\"method\":\"tools/call\"";
    line.windows(m.len()).any(|w| w == m)
}

/// The rest of a `tools/call` answer line (after the id) whose text is `n` bytes of prose.
fn answer_of(n: usize, accented: bool) -> Vec<u8> {
    const PROSE: &str =
        "The quick brown fox jumps over the lazy dog; a resource holds lines of plain text.\\n";
    // Accented prose naming a token prefix (no token): what makes a Unicode word boundary in a
    // secret rule leave the regex crate's DFA for its NFA simulation.
    const ACCENTED: &str =
        "Le renard brun rapide saute par-dessus le chien paresseux ; la clé ghp_é n'est pas là.\\n";
    let prose = if accented { ACCENTED } else { PROSE };
    let mut text = String::with_capacity(n + prose.len());
    while text.len() < n {
        text.push_str(prose);
    }
    let mut end = n;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    // Never end inside an escape.
    while text.ends_with('\\') {
        text.pop();
    }
    let mut out = b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"".to_vec();
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\"}],\"isError\":false}}\n");
    out
}

/// The rest of the response line (after the id) for a request line.
fn result_for(line: &[u8], list_exec: bool) -> &'static [u8] {
    let has = |m: &[u8]| line.windows(m.len()).any(|w| w == m);
    if has(b"\"method\":\"tools/call\"") {
        b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"isError\":false}}\n"
    } else if has(b"\"method\":\"tools/list\"") && list_exec {
        b",\"result\":{\"tools\":[{\"name\":\"echo\",\"description\":\"Echoes.\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"exec\",\"description\":\"Runs a command.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}}}}]}}\n"
    } else if has(b"\"method\":\"tools/list\"") {
        b",\"result\":{\"tools\":[{\"name\":\"echo\",\"description\":\"Echoes.\",\"inputSchema\":{\"type\":\"object\"}}]}}\n"
    } else if has(b"\"method\":\"initialize\"") {
        b",\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"bench-echo\",\"version\":\"1.0.0\"}}}\n"
    } else {
        b",\"result\":{}}\n"
    }
}

/// The raw id text after `"id":` up to the next `,` or `}` (the bench client writes simple ids).
fn find_id(line: &[u8]) -> Option<&[u8]> {
    let key = b"\"id\":";
    let at = line.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &line[at..];
    let end = rest.iter().position(|b| *b == b',' || *b == b'}')?;
    Some(&rest[..end])
}
