//! Feeds arbitrary bytes to the RESP request decoder, as one buffer and
//! as a stream cut at every point the input picks: it must never panic, a
//! frame must stay within its input, and taking frames one by one must
//! consume exactly what they said.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use spool_server::resp::frame::{parse, take, FrameLimits};

fuzz_target!(|data: &[u8]| {
    let limits = FrameLimits {
        max_bulk: 4096,
        max_frame: 16384,
        max_args: 64,
        max_inline: 4096,
    };
    let mut buf = BytesMut::from(data);
    while let Ok(Some(frame)) = parse(&buf, &limits) {
        assert!(frame.len > 0 && frame.len <= buf.len());
        assert!(frame.args.iter().all(|r| r.start <= r.end && r.end <= frame.len));
        let before = buf.len();
        let args = take(&mut buf, &frame);
        assert_eq!(args.len(), frame.args.len());
        assert_eq!(buf.len(), before - frame.len);
    }
});
