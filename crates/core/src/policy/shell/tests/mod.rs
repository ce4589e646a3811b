//! The reader and the prefix lists, table by table.

mod plain;
mod prefixes;
mod programs;
mod reader;
