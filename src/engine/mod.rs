//! What runs the plan: the action graph, fingerprints, locks, the device cache layout, archives and the compilation database.

pub mod archive;
pub mod compile_db;
pub mod facts;
pub mod fingerprint;
pub mod graph;
pub mod layout;
pub mod lock;
