//! The console's built files, embedded at compile time from `console/dist/` (built by
//! `npm run build` in `console/` and committed, so `cargo build` needs no Node).

/// One embedded file and the path it is served at.
#[derive(Debug)]
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

macro_rules! dist {
    ($file:literal) => {
        include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../console/dist/",
            $file
        ))
    };
}

/// Every file the console is made of.
pub static ASSETS: &[Asset] = &[
    Asset {
        path: "/",
        content_type: "text/html; charset=utf-8",
        body: dist!("index.html"),
    },
    Asset {
        path: "/app.js",
        content_type: "text/javascript; charset=utf-8",
        body: dist!("app.js"),
    },
    Asset {
        path: "/app.css",
        content_type: "text/css; charset=utf-8",
        body: dist!("app.css"),
    },
    // asked for by every browser on every page, linked or not
    Asset {
        path: "/favicon.ico",
        content_type: "image/x-icon",
        body: dist!("favicon.ico"),
    },
];
