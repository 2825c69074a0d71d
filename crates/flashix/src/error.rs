//! The crate's one error type (docs/design.md, contract point 6: every failure is an `Error` that
//! says what and where; nothing panics on bad input or I/O errors).

use std::path::PathBuf;

/// Result alias used throughout flashix.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in flashix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error, with what flashix was doing when it happened.
    #[error("I/O error while {context}: {source}")]
    Io {
        /// What flashix was doing (`reading page 7 of data`, `syncing the WAL`, ...).
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Stored data failed a check (checksum, magic, structure). `file` names the file
    /// (`data`, `MANIFEST`, `wal-000001.log`, ...) and `page` the page or byte offset.
    #[error("corruption in {file}{}: {detail}", page.map(|p| format!(" at page {p}")).unwrap_or_default())]
    Corruption {
        /// The file the damaged data is in.
        file: String,
        /// The page (or byte offset) inside `file`, when the check knows it.
        page: Option<u64>,
        /// What failed: the checksum, the magic, the structure, ...
        detail: String,
    },
    /// The options cannot be used (bad page size, buffer pool below the engine's minimum, ...).
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// `open` of a directory that does not exist.
    #[error("no such directory: {}", .0.display())]
    NotFound(PathBuf),
    /// `create` over a directory that already holds an index or other files.
    #[error("{} already exists and is not empty", .0.display())]
    AlreadyExists(PathBuf),
    /// `open` of a directory that holds no flashix index.
    #[error("{} holds no flashix index (no MANIFEST)", .0.display())]
    NotAnIndex(PathBuf),
    /// The index was written by another on-disk format version.
    #[error(
        "on-disk format version {found} is not supported (this build reads version {supported})"
    )]
    UnsupportedVersion {
        /// The version the index's manifest records.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// A feature or engine kind that this build does not provide.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// An earlier error left the in-memory state unusable; reopen the index.
    #[error("the index is unusable after an earlier error ({0}); close it and open it again")]
    Poisoned(String),
    /// A bad argument to an operation.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Never returned to a caller: a shared read stopped at a page missing from the buffer
    /// pool, so that the page is read with the engine's lock released and the read run
    /// again (`crate::durable::outside`, `crate::kit::parallel`).
    #[doc(hidden)]
    #[error("internal: a shared read stopped at a page missing from the buffer pool")]
    PageMiss,
}

impl Error {
    /// The same error once more, for a second party that must report it too (the merge
    /// thread whose request the engine thread served and saw fail): an I/O error keeps its
    /// context, kind and message; every other kind is copied.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Io { context, source } => Error::Io {
                context: context.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corruption { file, page, detail } => Error::Corruption {
                file: file.clone(),
                page: *page,
                detail: detail.clone(),
            },
            Error::InvalidOptions(m) => Error::InvalidOptions(m.clone()),
            Error::NotFound(p) => Error::NotFound(p.clone()),
            Error::AlreadyExists(p) => Error::AlreadyExists(p.clone()),
            Error::NotAnIndex(p) => Error::NotAnIndex(p.clone()),
            Error::UnsupportedVersion { found, supported } => Error::UnsupportedVersion {
                found: *found,
                supported: *supported,
            },
            Error::Unsupported(m) => Error::Unsupported(m.clone()),
            Error::Poisoned(m) => Error::Poisoned(m.clone()),
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::PageMiss => Error::PageMiss,
        }
    }

    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// A corruption error naming a file and page.
    pub fn corruption(
        file: impl Into<String>,
        page: Option<u64>,
        detail: impl Into<String>,
    ) -> Self {
        Error::Corruption {
            file: file.into(),
            page,
            detail: detail.into(),
        }
    }

    /// The error a full disk gives: `Error::Io` with the OS error ENOSPC, so that a full
    /// simulated SSD, a full raw NAND and a full file system are one error to callers
    /// ([`Error::is_no_space`]) and poison the `Db` alike. `context` says what was being
    /// done (`"writing page 7 of the simulated SSD"`).
    pub fn no_space(context: impl Into<String>) -> Self {
        Error::io(context, std::io::Error::from_raw_os_error(libc::ENOSPC))
    }

    /// True for `Error::Io` whose OS error is ENOSPC.
    pub fn is_no_space(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC))
    }
}

/// The outcome a decoder of damaged bytes may have (`crate::hostile`): a value, or
/// [`Error::Corruption`]; anything else is the message of a failed property.
#[cfg(test)]
pub(crate) fn ok_or_corruption<T>(r: Result<T>) -> std::result::Result<(), String> {
    match r {
        Ok(_) | Err(Error::Corruption { .. }) => Ok(()),
        Err(e) => Err(format!("not a corruption error: {e:?}")),
    }
}
