//! The reader and the prefix lists, table by table.

mod grammar;
mod plain;
mod prefixes;
mod programs;
mod reader;
