//! toolgate's policy core: pure, synchronous decisions over settings documents.
//! It performs no I/O and knows nothing of protobuf, storage or the network.
//!
//! `backoff` is the one retry backoff of every layer above. `policy` decides calls (MCP and built-in tools, shell lines, deletions) and
//! filters tool lists; `ids` is the one check of team and user ids; `secure_url` the one check of where the server itself sends or fetches (https, or http to loopback); `examples` checks a policy's examples (calls and the answers they must get); `secrets` masks secrets out of calls before they are stored or shown; `pins` the canonical form of a pinned tool and the checks of its description; `hook` reads each agent client's hook payload into a call and
//! puts a decision in its words; `export` turns a policy into each client's
//! native permission format.

pub mod backoff;
pub mod examples;
pub mod export;
pub mod hook;
pub mod ids;
pub mod pins;
pub mod policy;
pub mod secrets;
pub mod secure_url;
