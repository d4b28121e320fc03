//! What one closed capture shows was used ([`Observed`]), read on the worker, and what all of
//! them show together ([`Evidence`]), added up in the caller: counts per name, never per call,
//! so memory grows with the distinct names seen, not with the number of captures.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use std::path::Path;

use crate::capture::{DecisionRow, ListingRow, LogLine, McpDecisionRow};
use crate::evidence::tool_definitions::{self, KeptDefinition};
use crate::methods::{self, Governor};

/// Allowed and refused decisions on one name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Uses {
    /// Decisions that let it through.
    pub allowed: u64,
    /// Decisions that refused it (`deny` or `error`).
    pub refused: u64,
}

/// What one capture shows.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    calls: BTreeMap<String, Uses>,
    /// Tool name → definition digests seen (listings and calls).
    definitions: BTreeMap<String, BTreeSet<String>>,
    resources: BTreeMap<String, Uses>,
    /// Resource URIs a `resources/list` listing named (shown or removed).
    resources_listed: BTreeSet<String>,
    prompts: BTreeMap<String, Uses>,
    features: BTreeMap<String, Uses>,
    /// Allowed calls of the session, and the most repeats of one call (same tool, same
    /// arguments digest).
    allowed_calls: u64,
    /// Tool → arguments digest (`""` for none) → allowed calls.
    repeats: HashMap<String, HashMap<String, u64>>,
    /// Tool → allowed calls that recorded no definition digest (no listing of the session held
    /// the tool): pins would refuse them.
    unlisted: BTreeMap<String, u64>,
    /// The definitions the capture kept (`record_definitions`) for digests its log recorded.
    kept: BTreeMap<(String, String), KeptDefinition>,
}

/// The entry of `name`, allocating its key only the first time.
fn slot<'m, V: Default>(map: &'m mut BTreeMap<String, V>, name: &str) -> Option<&'m mut V> {
    if !map.contains_key(name) {
        map.insert(name.to_owned(), V::default());
    }
    map.get_mut(name)
}

fn tally(map: &mut BTreeMap<String, Uses>, name: &str, allowed: bool) {
    let Some(u) = slot(map, name) else { return };
    if allowed {
        u.allowed += 1;
    } else {
        u.refused += 1;
    }
}

impl Observed {
    /// Reads the decision lines of a closed capture, and the definitions kept in its directory
    /// `dir` for the digests those lines recorded.
    pub(crate) fn of(dir: &Path, lines: &[LogLine]) -> Observed {
        let mut o = Observed::default();
        for line in lines {
            match line {
                LogLine::Decision(d) => o.call(d),
                LogLine::McpDecision(d) => o.mcp(d),
                LogLine::Listing(l) => o.listing(l),
                // An answer's event (SPEC §5.3) is no decision: it neither uses nor lists.
                LogLine::Result(_) | LogLine::Refused { .. } => {}
            }
        }
        if !o.definitions.is_empty() {
            // Only a capture whose log recorded some digest can vouch for a kept definition.
            let mut kept = tool_definitions::read_kept(dir);
            kept.retain(|(name, digest), _| {
                o.definitions
                    .get(name)
                    .is_some_and(|set| set.contains(digest))
            });
            o.kept = kept;
        }
        o
    }

    fn call(&mut self, d: &DecisionRow) {
        let Some(tool) = &d.tool else { return };
        let allowed = d.decision == "allow";
        tally(&mut self.calls, tool, allowed);
        if let Some(def) = &d.tool_definition_sha256 {
            if let Some(set) = slot(&mut self.definitions, tool) {
                if !set.contains(def) {
                    set.insert(def.clone());
                }
            }
        }
        if allowed && d.tool_definition_sha256.is_none() {
            *self.unlisted.entry(tool.clone()).or_default() += 1;
        }
        if allowed {
            self.allowed_calls += 1;
            let args = d.arguments_sha256.as_deref().unwrap_or_default();
            let per_tool = match self.repeats.get_mut(tool.as_str()) {
                Some(m) => m,
                None => self.repeats.entry(tool.clone()).or_default(),
            };
            match per_tool.get_mut(args) {
                Some(n) => *n += 1,
                None => {
                    per_tool.insert(args.to_owned(), 1);
                }
            }
        }
    }

    fn mcp(&mut self, d: &McpDecisionRow) {
        let Some(target) = &d.target else { return };
        let allowed = d.decision == "allow";
        match methods::method(&d.method).map(|m| m.governor) {
            Some(Governor::Resources) => tally(&mut self.resources, target, allowed),
            Some(Governor::Prompts) => tally(&mut self.prompts, target, allowed),
            Some(Governor::ClientFeatures) => tally(&mut self.features, target, allowed),
            _ => {}
        }
    }

    fn listing(&mut self, l: &ListingRow) {
        let governor = methods::method(l.list_name()).map(|m| m.governor);
        match governor {
            Some(Governor::ToolsListing) => {
                for s in &l.shown {
                    self.definitions
                        .entry(s.name.clone())
                        .or_default()
                        .insert(s.sha256.clone());
                }
                for r in &l.removed {
                    let set = self.definitions.entry(r.name.clone()).or_default();
                    set.extend(r.sha256.clone());
                }
            }
            Some(Governor::ResourcesListing) if !methods::lists_templates(l.list_name()) => {
                let names = l.shown.iter().map(|s| &s.name);
                self.resources_listed
                    .extend(names.chain(l.removed.iter().map(|r| &r.name)).cloned());
                for r in &l.removed {
                    tally(&mut self.resources, &r.name, false);
                }
            }
            _ => {}
        }
    }
}

/// Uses of one name over many captures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    /// All the decisions.
    pub uses: Uses,
    /// Captures with at least one allowed decision on it.
    pub captures: u64,
    /// The most allowed decisions on it in one session.
    pub session_max: u64,
}

impl Seen {
    fn add(&mut self, u: Uses) {
        self.uses.allowed += u.allowed;
        self.uses.refused += u.refused;
        if u.allowed > 0 {
            self.captures += 1;
        }
        self.session_max = self.session_max.max(u.allowed);
    }
}

/// What every closed capture shows together.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// Closed captures read.
    pub captures: u64,
    /// Tools called, by name.
    pub calls: BTreeMap<String, Seen>,
    /// Tool definitions seen, by name: each digest and how many captures saw it.
    pub definitions: BTreeMap<String, BTreeMap<String, u64>>,
    /// Resource URIs judged (read, subscribed, or removed from a listing), by URI.
    pub resources: BTreeMap<String, Seen>,
    /// Resource URIs a listing named.
    pub resources_listed: BTreeSet<String>,
    /// Prompts got, by name.
    pub prompts: BTreeMap<String, Seen>,
    /// Client features the server asked for, by feature.
    pub features: BTreeMap<String, Seen>,
    /// The most allowed tool calls in one session.
    pub tool_calls_max: u64,
    /// The most times one session made the same allowed call.
    pub repeated_max: u64,
    /// Tool → allowed calls, over every capture, that recorded no definition digest.
    pub unlisted: BTreeMap<String, u64>,
    /// The definitions kept by the captures (`record_definitions`), by tool name and digest,
    /// each for a digest the capture's closed log recorded for that name.
    pub kept: BTreeMap<(String, String), KeptDefinition>,
    /// Captures that kept definitions (a `tool-definitions.ndjson` with at least one vouched
    /// line).
    pub captures_keeping: u64,
}

impl Evidence {
    /// Adds one capture.
    pub fn add(&mut self, o: Observed) {
        self.captures += 1;
        let merge = |into: &mut BTreeMap<String, Seen>, from: BTreeMap<String, Uses>| {
            for (name, u) in from {
                into.entry(name).or_default().add(u);
            }
        };
        merge(&mut self.calls, o.calls);
        merge(&mut self.resources, o.resources);
        merge(&mut self.prompts, o.prompts);
        merge(&mut self.features, o.features);
        for (tool, digests) in o.definitions {
            let e = self.definitions.entry(tool).or_default();
            for d in digests {
                *e.entry(d).or_insert(0) += 1;
            }
        }
        self.resources_listed.extend(o.resources_listed);
        for (tool, n) in o.unlisted {
            *self.unlisted.entry(tool).or_default() += n;
        }
        if !o.kept.is_empty() {
            self.captures_keeping += 1;
        }
        for (key, definition) in o.kept {
            self.kept.entry(key).or_insert(definition);
        }
        self.tool_calls_max = self.tool_calls_max.max(o.allowed_calls);
        let repeats = o.repeats.values().flat_map(|m| m.values()).copied().max();
        let repeats = repeats.unwrap_or(0);
        self.repeated_max = self.repeated_max.max(repeats);
    }
}
