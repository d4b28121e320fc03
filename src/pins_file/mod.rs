//! The pins file and what it is compared with (SPEC §5.1), below the policy that names one: the
//! file itself ([`file`]: reading it strictly, rendering it), a listing's data ([`listed`]) and
//! the diff between the two ([`diff`], `assay mcp pin --check`). Listing a live server and
//! writing the file are `pins` (above the proxy); the public paths are `assay::pins::…`.
#![forbid(unsafe_code)]

pub(crate) mod diff;
pub(crate) mod file;
pub(crate) mod listed;

pub use diff::{ChangedTool, PinCheck, check};
pub use file::{InstructionsPin, MAX_PINS_BYTES, PINS_SCHEMA, Pin, Pins, PinsError};
pub use listed::{ListedTool, ServerCatalog, ToolListing};
