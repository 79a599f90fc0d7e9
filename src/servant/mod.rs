//! The node-side half of yurtctl: pure file edits on a host root.
//!
//! Everything here takes the node's `/` as a directory (`host_root`), computes changes in
//! memory first and writes them atomically only in [`plan::apply`]. Nothing spawns
//! processes or talks to the network; the hidden `node-servant` subcommand wraps it.

pub mod error;
pub mod hostfs;
pub mod systemd;

pub use error::{Result, ServantError};
