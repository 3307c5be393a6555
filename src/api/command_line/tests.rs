//! Tests of the command-line reader: every spelling getopt accepts reads the same.

use proptest::prelude::*;

use super::*;

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_owned).collect()
}

/// The options of `line` as `(flag, value)`, and the refused arguments' indexes.
fn shown(line: &[String]) -> (Vec<(char, Option<String>)>, Vec<usize>) {
    let read = read(line);
    let options = read
        .options
        .iter()
        .map(|o| (o.flag, o.value.map(str::to_owned)))
        .collect();
    (options, read.refused.iter().map(|r| r.at).collect())
}

fn options(line: &str) -> Vec<(char, Option<String>)> {
    let (options, refused) = shown(&args(line));
    assert_eq!(refused, Vec::<usize>::new(), "{line}");
    options
}

fn o(flag: char, value: Option<&str>) -> (char, Option<String>) {
    (flag, value.map(str::to_owned))
}

/// Spellings of the same options, one line each, `|` between them, and what they read as.
const SPELLINGS: [(&str, &str); 5] = [
    (
        "-m 2048|-m2048|--memory-limit=2048|--memory-limit 2048|--memory-l=2048|--memory-lim 2048",
        "m=2048",
    ),
    (
        "-v -v -o ext_path=/x:1g|-vvoext_path=/x:1g|-vv -o ext_path=/x:1g|\
         -v -v --extended=ext_path=/x:1g|-vvo ext_path=/x:1g|-v -v --ext ext_path=/x:1g",
        "v v o=ext_path=/x:1g",
    ),
    (
        "-v -U 11211|-vU11211|-vU 11211|-v --udp-port=11211|--verbose -U11211|-v --udp 11211",
        "v U=11211",
    ),
    (
        "-C -M -k|-CMk|-CM -k|--disable-cas --disable-e --lock",
        "C M k",
    ),
    (
        "-B binary -S|-Bbinary -S|-SB binary|--protocol=binary --enable-sasl|-S --proto binary",
        "B=binary S",
    ),
];

#[test]
fn every_spelling_of_an_option_reads_the_same() {
    for (spellings, expected) in SPELLINGS {
        let mut want: Vec<(char, Option<String>)> = expected
            .split(' ')
            .map(|o| {
                let flag = o.chars().next().expect("a flag");
                (flag, o.get(2..).map(str::to_owned))
            })
            .collect();
        want.sort();
        for spelling in spellings.split('|') {
            let mut got = options(spelling);
            got.sort();
            assert_eq!(got, want, "{spelling}");
        }
    }
}

#[test]
fn clustered_flags_end_at_the_first_flag_with_a_value() {
    assert_eq!(
        options("-vvoext_path=/x:1g"),
        [o('v', None), o('v', None), o('o', Some("ext_path=/x:1g"))]
    );
    assert_eq!(
        options("-vm 64 -t4"),
        [o('v', None), o('m', Some("64")), o('t', Some("4"))]
    );
    // A value in the next argument is taken whatever it looks like.
    assert_eq!(options("-m -C"), [o('m', Some("-C"))]);
    assert_eq!(
        options("--memory-limit= -C"),
        [o('m', Some("")), o('C', None)]
    );
    // memcached strips a value's leading whitespace.
    let spaced = vec!["-m".to_owned(), "  64".to_owned()];
    assert_eq!(shown(&spaced).0, [o('m', Some("64"))]);
    assert_eq!(
        shown(&["-o\tmodern".to_owned()]).0,
        [o('o', Some("modern"))]
    );
}

#[test]
fn arguments_that_are_not_options_are_skipped_and_nothing_is_read_after_two_dashes() {
    assert_eq!(options("modern -m 64 - x"), [o('m', Some("64"))]);
    assert_eq!(options("-v -- -U 11211 -m 64"), [o('v', None)]);
    assert_eq!(options("--verbose=2 -v"), [o('v', Some("2")), o('v', None)]);
}

#[test]
fn what_memcached_refuses_is_said_with_its_argument() {
    for (line, refused) in [
        ("-x", vec![0]),
        ("-v -vxU 1", vec![1]),
        ("-m", vec![0]),
        ("-v -o", vec![1]),
        ("--memory-limit", vec![0]),
        ("--nothing=1", vec![0]),
        ("--disable 1", vec![0]),
        ("--enable-s", vec![0]),
        ("--disable-cas=yes", vec![0]),
        ("-D", vec![0]),
    ] {
        assert_eq!(shown(&args(line)).1, refused, "{line}");
    }
    let reasons: Vec<String> = ["-q", "-m", "--enable-s", "--disable-cas=yes", "--what"]
        .iter()
        .map(|a| read(&args(a)).refused[0].reason.clone())
        .collect();
    assert_eq!(
        reasons,
        [
            "-q is not a memcached option",
            "-m needs a value",
            "--enable-s is ambiguous",
            "--disable-cas takes no value (-C)",
            "--what is not a memcached option"
        ]
    );
}

#[test]
fn the_last_option_wins_and_values_say_where_they_are() {
    let line = args("-m 64 -t4 -m128");
    let read = read(&line);
    let last = read.last('m').expect("-m");
    assert_eq!((last.value, last.at, last.value_at), (Some("128"), 3, 3));
    let first = read.all('m').next().expect("-m");
    assert_eq!((first.at, first.value_at), (0, 1));
    assert!(read.has('t') && !read.has('U'));
}

#[test]
fn sub_options_split_on_commas() {
    let line = args("-o no_lru_crawler,ext_path=/x:1g=2,,slab_sizes=1-2 --extended=modern");
    let read = read(&line);
    let subs: Vec<(&str, Option<&str>)> = read.extended().map(|(_, s)| (s.name, s.value)).collect();
    assert_eq!(
        subs,
        [
            ("no_lru_crawler", None),
            ("ext_path", Some("/x:1g=2")),
            ("slab_sizes", Some("1-2")),
            ("modern", None)
        ]
    );
}

#[test]
fn numbers_and_item_sizes_read_like_memcached() {
    for (text, n) in [
        ("64", Some(64)),
        (" 64x", Some(64)),
        ("x", Some(0)),
        ("-3", Some(-3)),
        ("+7", Some(7)),
    ] {
        assert_eq!(atoi(text), n, "{text}");
    }
    assert_eq!(atoi("99999999999999999999"), None);
    for (text, bytes) in [
        ("1m", Some(1 << 20)),
        ("1M", Some(1 << 20)),
        ("512k", Some(512 << 10)),
        ("512K", Some(512 << 10)),
        ("2097152", Some(2 << 20)),
        ("x", None),
        ("m", None),
        ("-1m", None),
        ("99999999999999999999m", None),
    ] {
        assert_eq!(item_size_bytes(text), bytes, "{text}");
    }
}

/// One option written in one of the ways getopt reads it; `cluster` asks a flag without a value
/// to be joined to the next argument's flags.
fn spell(flag: char, value: Option<&str>, long_name: bool, attached: bool) -> Vec<String> {
    let long_of = OPTIONS
        .iter()
        .find(|(f, takes, l)| *f == flag && *takes != Takes::Attached && l.is_some())
        .and_then(|(_, _, l)| *l);
    match (value, long_name.then_some(long_of).flatten()) {
        (None, Some(l)) => vec![format!("--{l}")],
        (None, None) => vec![format!("-{flag}")],
        (Some(v), Some(l)) if attached => vec![format!("--{l}={v}")],
        (Some(v), Some(l)) => vec![format!("--{l}"), v.to_owned()],
        (Some(v), None) if attached => vec![format!("-{flag}{v}")],
        (Some(v), None) => vec![format!("-{flag}"), v.to_owned()],
    }
}

fn option() -> impl Strategy<Value = (char, Option<String>)> {
    let flags: Vec<(char, Takes)> = OPTIONS
        .iter()
        .filter(|(_, takes, _)| *takes != Takes::Attached)
        .map(|(f, t, _)| (*f, *t))
        .collect();
    (proptest::sample::select(flags), "[a-z0-9=,:/_.-]{1,12}")
        .prop_map(|((flag, takes), v)| (flag, (takes == Takes::Value).then_some(v)))
}

proptest! {
    /// Any spelling of the same options, clustered or not, reads as the same options.
    #[test]
    fn any_spelling_reads_the_same(
        opts in proptest::collection::vec((option(), any::<bool>(), any::<bool>(), any::<bool>()), 0..8)
    ) {
        let mut line = Vec::new();
        let mut cluster: Option<String> = None;
        for ((flag, value), long_name, attached, join) in &opts {
            let spelled = spell(*flag, value.as_deref(), *long_name, *attached);
            let short = !spelled[0].starts_with("--");
            match cluster.take() {
                // A flag without a value, written short, may carry the next short option.
                Some(head) if short => {
                    let mut first = spelled.clone();
                    first[0] = format!("{head}{}", &spelled[0][1..]);
                    line.extend(first);
                }
                Some(head) => {
                    line.push(head);
                    line.extend(spelled.clone());
                }
                None => line.extend(spelled.clone()),
            }
            if *join && short && value.is_none() {
                cluster = line.pop();
            }
        }
        line.extend(cluster);
        let (got, refused) = shown(&line);
        prop_assert!(refused.is_empty(), "{line:?}");
        let want: Vec<(char, Option<String>)> = opts
            .iter()
            .map(|((flag, value), ..)| (*flag, value.as_deref().map(|v| trimmed(v).to_owned())))
            .collect();
        prop_assert_eq!(got, want, "{:?}", line);
    }
}
