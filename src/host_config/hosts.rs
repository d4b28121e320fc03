//! Where each desktop host keeps its MCP server configuration (SPEC §10 `wrap-config --host`,
//! `assay mcp hosts`): one table, read from `$HOME` and `$XDG_CONFIG_HOME` so that a test (or a
//! user looking at another account) can point them elsewhere.

use std::path::{Path, PathBuf};

/// A host whose configuration `assay mcp wrap-config --host` finds by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Host {
    /// Claude Desktop: `claude_desktop_config.json`, `mcpServers`.
    ClaudeDesktop,
    /// Claude Code: `~/.claude.json`, `mcpServers` and each project's `mcpServers`.
    ClaudeCode,
    /// Cursor: `~/.cursor/mcp.json`, `mcpServers`.
    Cursor,
    /// VS Code: the user profile's `mcp.json`, `servers`.
    VsCode,
}

impl Host {
    /// Every host, in the order `assay mcp hosts` lists them.
    pub const ALL: [Host; 4] = [
        Host::ClaudeDesktop,
        Host::ClaudeCode,
        Host::Cursor,
        Host::VsCode,
    ];

    /// The name `--host` takes: `claude-desktop`, `claude-code`, `cursor`, `vscode`.
    pub fn as_str(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "claude-desktop",
            Host::ClaudeCode => "claude-code",
            Host::Cursor => "cursor",
            Host::VsCode => "vscode",
        }
    }

    /// The host's usual configuration file on this platform, given the home directory and
    /// `$XDG_CONFIG_HOME` (used when set to an absolute path, as the XDG specification says;
    /// otherwise `HOME/.config`).
    pub fn config_path_in(self, home: &Path, xdg_config_home: Option<&Path>) -> PathBuf {
        let config = xdg_config_home
            .filter(|p| p.is_absolute())
            .map_or_else(|| home.join(".config"), Path::to_path_buf);
        // macOS keeps application data under ~/Library/Application Support.
        let app_support = if cfg!(target_os = "macos") {
            home.join("Library/Application Support")
        } else {
            config
        };
        match self {
            Host::ClaudeDesktop => app_support.join("Claude/claude_desktop_config.json"),
            Host::ClaudeCode => home.join(".claude.json"),
            Host::Cursor => home.join(".cursor/mcp.json"),
            Host::VsCode => app_support.join("Code/User/mcp.json"),
        }
    }

    /// [`Host::config_path_in`] with `$HOME` and `$XDG_CONFIG_HOME` of this process.
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidArgument`] when `$HOME` is unset, empty or relative.
    pub fn config_path(self) -> crate::Result<PathBuf> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute())
            .ok_or_else(|| {
                crate::Error::invalid_argument(format!(
                    "HOME is not set to an absolute path, so the {} configuration cannot be \
                     found; give the file's path instead of --host",
                    self.as_str()
                ))
            })?;
        let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
        Ok(self.config_path_in(&home, xdg.as_deref()))
    }
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Host {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Host::ALL
            .into_iter()
            .find(|h| h.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown host {s:?} (one of: {})",
                    Host::ALL.map(Host::as_str).join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_home_and_xdg_config_home() {
        let home = Path::new("/home/me");
        let p = |h: Host, xdg: Option<&str>| {
            h.config_path_in(home, xdg.map(Path::new))
                .display()
                .to_string()
        };
        assert_eq!(p(Host::ClaudeCode, None), "/home/me/.claude.json");
        assert_eq!(p(Host::Cursor, Some("/x")), "/home/me/.cursor/mcp.json");
        if cfg!(target_os = "macos") {
            assert_eq!(
                p(Host::ClaudeDesktop, None),
                "/home/me/Library/Application Support/Claude/claude_desktop_config.json"
            );
        } else {
            assert_eq!(
                p(Host::ClaudeDesktop, None),
                "/home/me/.config/Claude/claude_desktop_config.json"
            );
            assert_eq!(
                p(Host::ClaudeDesktop, Some("/xdg")),
                "/xdg/Claude/claude_desktop_config.json"
            );
            // A relative XDG_CONFIG_HOME is ignored (XDG Base Directory specification).
            assert_eq!(
                p(Host::VsCode, Some("rel")),
                "/home/me/.config/Code/User/mcp.json"
            );
        }
        for h in Host::ALL {
            assert_eq!(h.as_str().parse::<Host>(), Ok(h));
        }
        assert!("claude".parse::<Host>().is_err());
    }
}
