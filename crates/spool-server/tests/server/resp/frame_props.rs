//! Properties of the request decoder: any split of a valid stream decodes
//! to the same commands, and no input makes it panic or overrun.

use proptest::prelude::*;
use spool_server::resp::frame::{parse, take, FrameLimits};

use crate::resp::support::encode;

fn limits() -> FrameLimits {
    FrameLimits {
        max_bulk: 1024,
        max_frame: 4096,
        max_args: 64,
        max_inline: 1024,
    }
}

proptest! {
    #[test]
    fn a_stream_decodes_the_same_however_it_arrives(
        cmds in prop::collection::vec(prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..6), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let stream: Vec<u8> = cmds
            .iter()
            .flat_map(|c| encode(&c.iter().map(Vec::as_slice).collect::<Vec<_>>()))
            .collect();
        let cut = cut.index(stream.len() + 1);
        let mut buf = bytes::BytesMut::from(&stream[..cut]);
        let mut decoded = Vec::new();
        let mut fed = cut;
        loop {
            match parse(&buf, &limits()).unwrap() {
                Some(f) => decoded.push(take(&mut buf, &f).iter().map(|b| b.to_vec()).collect::<Vec<_>>()),
                None if fed < stream.len() => {
                    buf.extend_from_slice(&stream[fed..]);
                    fed = stream.len();
                }
                None => break,
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(decoded, cmds);
    }

    #[test]
    fn any_bytes_are_decoded_refused_or_awaited_without_panic(data in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(Some(f)) = parse(&data, &limits()) {
            prop_assert!(f.len <= data.len());
            prop_assert!(f.args.iter().all(|r| r.start <= r.end && r.end <= f.len));
        }
    }

    #[test]
    fn mutated_frames_never_panic(
        cmd in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..20), 1..5),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let mut data = encode(&cmd.iter().map(Vec::as_slice).collect::<Vec<_>>());
        for (at, b) in flips {
            let i = at.index(data.len());
            data[i] = b;
        }
        if let Ok(Some(f)) = parse(&data, &limits()) {
            prop_assert!(f.len <= data.len());
        }
    }
}
