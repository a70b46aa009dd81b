// The questions of the memory evaluation, each with the turns that answer it (by key; see
// sessions.rs). Three kinds:
//
// - Lexical: asked with words of the answering turn, as someone who remembers the wording
//   would. Most of those words also occur in other turns (the filler turns and the
//   unrelated sessions use the same names, hosts and topics).
// - Paraphrase: no content word in common with any answering turn (`check` in mod.rs
//   verifies this with a stop-word list and a crude stemmer).
// - Date: names a day ("on May 14", "the 28th of May", an ISO date) and asks what happened.
//   Two of them name the day something happened rather than the day it was talked about
//   (the outage and the v2 release were told the next day or two days later), as people do.

use super::{Kind, QuestionSpec};
use Kind::{Date, Lexical, Paraphrase};

const fn q(
    id: &'static str,
    kind: Kind,
    text: &'static str,
    evidence: &'static [&'static str],
) -> QuestionSpec {
    QuestionSpec {
        id,
        kind,
        text,
        evidence,
    }
}

pub const QUESTIONS: &[QuestionSpec] = &[
    // Lexical.
    q(
        "L01",
        Lexical,
        "Which port does the staging Postgres database on heron use?",
        &["staging-host", "staging-host-a"],
    ),
    q(
        "L02",
        Lexical,
        "Which machine will run the production database?",
        &["prod-host"],
    ),
    q(
        "L03",
        Lexical,
        "Why did we choose NATS JetStream over Kafka?",
        &["nats", "nats-a"],
    ),
    q(
        "L04",
        Lexical,
        "What is the expected peak volume of messages per second?",
        &["volume"],
    ),
    q(
        "L05",
        Lexical,
        "Which test was flaky in CI, and why did it time out?",
        &["flaky"],
    ),
    q(
        "L06",
        Lexical,
        "Which version did we pin the Rust toolchain to?",
        &["toolchain"],
    ),
    q(
        "L07",
        Lexical,
        "How long does the CI pipeline take now, after moving the jobs to kestrel?",
        &["ci-time", "ci-runner"],
    ),
    q(
        "L08",
        Lexical,
        "When is Hannah getting married in Galway?",
        &["wedding", "wedding-a"],
    ),
    q(
        "L09",
        Lexical,
        "When does my passport expire?",
        &["passport"],
    ),
    q(
        "L10",
        Lexical,
        "Why were the timestamps of the north pier sensors one hour off?",
        &["dst-cause", "dst-scope"],
    ),
    q(
        "L11",
        Lexical,
        "Who takes the on-call shifts while Priya is on parental leave?",
        &["cover", "cover-a"],
    ),
    q(
        "L12",
        Lexical,
        "When does Marcus Lindqvist start?",
        &["newhire"],
    ),
    q(
        "L13",
        Lexical,
        "Which removal company did I book for moving day?",
        &["movers"],
    ),
    q(
        "L14",
        Lexical,
        "How many rows are in the legacy MySQL database on osprey?",
        &["legacy"],
    ),
    q(
        "L15",
        Lexical,
        "How long did the dry run of the migration take per month of readings?",
        &["dryrun"],
    ),
    q(
        "L16",
        Lexical,
        "When do the TLS certificates on the load balancer expire?",
        &["cert-worry"],
    ),
    q(
        "L17",
        Lexical,
        "What retention policy did we decide on for Halvorsen's readings?",
        &["retention", "retention-a"],
    ),
    q(
        "L18",
        Lexical,
        "What did heaptrack show about the memory leak in the ingest worker?",
        &["leak-cause"],
    ),
    q(
        "L19",
        Lexical,
        "How many devices does the LRU cap on the device state map allow?",
        &["leak-fix"],
    ),
    q(
        "L20",
        Lexical,
        "What rate limit per client does the API have?",
        &["rate-limit", "rate-limit-a"],
    ),
    q(
        "L21",
        Lexical,
        "Why did WAL archiving fail on cormorant?",
        &["outage-creds"],
    ),
    q(
        "L22",
        Lexical,
        "What is the title of my talk at the Sintra Systems Summit?",
        &["talk-title"],
    ),
    q(
        "L23",
        Lexical,
        "Who from Quayside Analytics wants to try Tidewater?",
        &["quayside"],
    ),
    q(
        "L24",
        Lexical,
        "What was my finish time in the Riverside Half Marathon?",
        &["race-result"],
    ),
    q(
        "L25",
        Lexical,
        "What are the specs of merlin, the new build server?",
        &["merlin-spec"],
    ),
    q(
        "L26",
        Lexical,
        "What is the Postgres replica called?",
        &["replica", "replica-a"],
    ),
    q(
        "L27",
        Lexical,
        "When is the husky sledding tour in Tromsø?",
        &["tromso-dates"],
    ),
    q(
        "L28",
        Lexical,
        "How does the fix for the cursor pagination bug work?",
        &["tie-fix"],
    ),
    // Paraphrase: no content word shared with the evidence.
    q(
        "P01",
        Paraphrase,
        "Which programming language did the team pick for the new service, and who pushed for it?",
        &["lang"],
    ),
    q("P02", Paraphrase, "Who is my boss?", &["team", "team-a"]),
    q(
        "P03",
        Paraphrase,
        "How should replies about programming be formatted for me?",
        &["style", "style-a"],
    ),
    q(
        "P04",
        Paraphrase,
        "Which storage engine won the evaluation?",
        &["pg-decision", "pg-decision-a"],
    ),
    q(
        "P05",
        Paraphrase,
        "What food restrictions do I have?",
        &["diet", "diet-a"],
    ),
    q(
        "P06",
        Paraphrase,
        "What did we do to speed up the pipeline?",
        &["ci-runner"],
    ),
    q(
        "P07",
        Paraphrase,
        "Where do I like to sit on planes?",
        &["seat", "seat-a"],
    ),
    q(
        "P08",
        Paraphrase,
        "Which travel document was close to running out?",
        &["passport"],
    ),
    q(
        "P09",
        Paraphrase,
        "How are wrong hours from the pier gadgets corrected when data arrives?",
        &["dst-fix"],
    ),
    q(
        "P10",
        Paraphrase,
        "Who is the newcomer joining from Sweden?",
        &["newhire"],
    ),
    q(
        "P11",
        Paraphrase,
        "Who looks after my pet during the relocation?",
        &["dog-anxious", "dog-anxious-a"],
    ),
    q(
        "P12",
        Paraphrase,
        "What approach lets the historical transfer pick up where it left off after a failure?",
        &["copier"],
    ),
    q(
        "P13",
        Paraphrase,
        "What made me uneasy before the client presentation?",
        &["cert-worry", "demo-worry"],
    ),
    q(
        "P14",
        Paraphrase,
        "How long do we hold on to the shipping firm's measurements?",
        &["retention", "retention-a"],
    ),
    q(
        "P15",
        Paraphrase,
        "What was making the worker's RAM usage climb?",
        &["leak-cause"],
    ),
    q(
        "P16",
        Paraphrase,
        "Which injury did the therapist diagnose?",
        &["physio-result"],
    ),
    q(
        "P17",
        Paraphrase,
        "What do I like in my cup at breakfast and before bed?",
        &["tea", "tea-a"],
    ),
    q(
        "P18",
        Paraphrase,
        "How do clients pick which edition of the interface they call?",
        &["api-versioning"],
    ),
    q(
        "P19",
        Paraphrase,
        "What made the main database refuse new data?",
        &["outage-cause", "outage-creds"],
    ),
    q(
        "P20",
        Paraphrase,
        "Who did I meet at the Portuguese event that might become a client?",
        &["quayside"],
    ),
    q(
        "P21",
        Paraphrase,
        "What did I snack on during the trip to Portugal?",
        &["food"],
    ),
    q(
        "P22",
        Paraphrase,
        "How did I plan to fuel during the race?",
        &["gels"],
    ),
    q(
        "P23",
        Paraphrase,
        "What went wrong physically near the end of the half?",
        &["race-cramp"],
    ),
    q(
        "P24",
        Paraphrase,
        "Are we changing the container scheduler soon?",
        &["nomad"],
    ),
    q(
        "P25",
        Paraphrase,
        "Which credentials got exposed, and where?",
        &["secrets-leak"],
    ),
    q(
        "P26",
        Paraphrase,
        "How much money was granted for the replacement compile machine?",
        &["merlin"],
    ),
    q(
        "P27",
        Paraphrase,
        "Where am I going to watch the aurora?",
        &["tromso"],
    ),
    q(
        "P28",
        Paraphrase,
        "Why did some rows go missing when clients walked through the results in chunks?",
        &["tie-bug", "tie-bug-a"],
    ),
    // Dates.
    q(
        "D01",
        Date,
        "What did we decide on {2026-05-14}?",
        &["nats", "nats-a"],
    ),
    q(
        "D02",
        Date,
        "What did we settle on {2026-05-11}?",
        &["pg-decision", "pg-decision-a", "timescale"],
    ),
    q(
        "D03",
        Date,
        "What was I worried about on {2026-07-01}?",
        &["cert-worry", "demo-worry"],
    ),
    q(
        "D04",
        Date,
        "What bug did we find on {2026-06-03}?",
        &["dst-symptom", "dst-cause"],
    ),
    q(
        "D05",
        Date,
        "What team news did I share on {2026-06-10}?",
        &["leave", "newhire"],
    ),
    q("D06", Date, "What did I book on {2026-06-17}?", &["movers"]),
    q(
        "D07",
        Date,
        "What happened at the customer meeting on {2026-07-08}?",
        &["demo-ok", "halvorsen-ask", "retention"],
    ),
    q(
        "D08",
        Date,
        "What did the profiler show on {2026-07-22}?",
        &["leak-cause"],
    ),
    q(
        "D09",
        Date,
        "How did the move go, as I told you on {2026-07-29|ord}?",
        &["moved", "biscuit-settle"],
    ),
    q(
        "D10",
        Date,
        "What did we decide about the API on {2026-08-05}?",
        &[
            "api-versioning",
            "pagination",
            "pagination-a",
            "v1-deprecate",
        ],
    ),
    q(
        "D11",
        Date,
        "What was I writing on the evening of {2026-08-14}?",
        &["speech"],
    ),
    q("D12", Date, "What went down on {2026-08-25}?", &["outage"]),
    q(
        "D13",
        Date,
        "Who did I rehearse with on {2026-09-02}?",
        &["rehearsal"],
    ),
    q(
        "D14",
        Date,
        "What did I tell you about the conference on {2026-09-21}?",
        &["talk-went", "quayside"],
    ),
    q(
        "D15",
        Date,
        "What was my race plan on {2026-09-30}?",
        &["pace", "gels"],
    ),
    q(
        "D16",
        Date,
        "What did we decide about infrastructure on {2026-10-07}?",
        &["nomad"],
    ),
    q(
        "D17",
        Date,
        "What did we decide on {2026-10-15}?",
        &["rotate", "rotate-a"],
    ),
    q(
        "D18",
        Date,
        "What did Dolores approve on {2026-10-28|dmy}?",
        &["merlin"],
    ),
    q(
        "D19",
        Date,
        "What arrived on {2026-11-04|iso}?",
        &["passport-done"],
    ),
    q(
        "D20",
        Date,
        "What did we ship on {2026-11-10}?",
        &["v2-release"],
    ),
    q(
        "D21",
        Date,
        "What did we talk about on {2026-05-21|dm}?",
        &["ci-slow", "ci-runner", "ci-time", "flaky", "toolchain"],
    ),
    q(
        "D22",
        Date,
        "What was bothering me on {2026-07-15|ord}?",
        &["knee"],
    ),
    q(
        "D23",
        Date,
        "Summary of {2026-06-24|iso}: what did we plan?",
        &["copier", "parallel", "dryrun"],
    ),
    q(
        "D24",
        Date,
        "What trips did I tell you about on the {2026-05-28|dord}?",
        &["wedding", "summit"],
    ),
    q(
        "D25",
        Date,
        "What birds did I see on {2026-06-28|mdy}?",
        &["birds"],
    ),
    q(
        "D26",
        Date,
        "What did I say about Biscuit on {2026-06-17|dmy}?",
        &["dog", "dog-anxious"],
    ),
    q(
        "D27",
        Date,
        "What did Marcus work on according to our talk on {2026-10-15}?",
        &["scrub"],
    ),
    q(
        "D28",
        Date,
        "What did I tell you on {2026-09-02} about where I'm staying?",
        &["hotel"],
    ),
];
