// The hand-written part of the memory evaluation: 26 conversations between one person and
// their assistant from May to November 2026. The person is a backend engineer at Larkspur
// Labs building "Tidewater", an ingest service for harbour sensor data; the talks also cover
// colleagues, a flat move, running, a wedding, travel and so on. The build servers and
// database hosts are named after birds, and the person also watches birds, so host names
// come up in unrelated turns too.
//
// A turn is (who, text): who is "u" (the person) or "a" (the assistant), optionally followed
// by "#key" when a question names the turn as evidence. `{2026-07-09}` and
// `{2026-07-09|fmt}` are dates written out when the data is built (see `render_dates` in
// mod.rs), so that the whole timeline can move without its dates going stale.

use super::SessionSpec;

pub const SESSIONS: &[SessionSpec] = &[
    SessionSpec {
        id: "s01",
        date: "2026-05-04",
        start: "09:05",
        turns: &[
            (
                "u#kickoff",
                "Morning. Today is the kickoff for Tidewater, the new ingest service at Larkspur Labs. It takes readings from the harbour sensors and stores them for the analytics team.",
            ),
            (
                "a",
                "Sounds like a good project. What's the scope for the first version — just ingest and storage, or queries too?",
            ),
            (
                "u#lang",
                "Ingest, storage and a small query API. We agreed this morning to write it in Rust; Go was the other candidate but Priya argued for Rust because of the parsing code we already have.",
            ),
            (
                "a",
                "Rust makes sense if you can reuse the parsers. Who else is on the team?",
            ),
            (
                "u#team",
                "Priya Raman leads the backend, Tomasz Wójcik runs infrastructure and on-call, Ines Duarte does the dashboard design, and Dolores Ferreira is our manager.",
            ),
            (
                "a#team-a",
                "Got it: Priya is backend lead, Tomasz infrastructure, Ines design, and Dolores is your manager.",
            ),
            (
                "u#milestone",
                "First milestone is an internal beta by the end of {2026-07-20|%B}. Dolores wants a demo for a customer before that.",
            ),
            (
                "a",
                "A beta in two and a half months with a customer demo earlier is tight but doable if the storage decision comes soon.",
            ),
            (
                "u#repo",
                "We'll keep everything in one monorepo on our GitLab, with the ingest worker, the API and the schema migrations as separate crates.",
            ),
            (
                "a",
                "A workspace with three crates — worker, api, migrations — keeps builds simple. Want me to sketch the layout?",
            ),
            (
                "u#style",
                "Later. One more thing: please always answer me with short bullet lists when it's about code; long prose makes me skim.",
            ),
            (
                "a#style-a",
                "Understood — short bullets whenever we talk about code.",
            ),
        ],
    },
    SessionSpec {
        id: "s02",
        date: "2026-05-11",
        start: "14:20",
        turns: &[
            (
                "u",
                "Back to Tidewater. We need to pick the database this week.",
            ),
            ("a", "What are the candidates?"),
            (
                "u#db-candidates",
                "Postgres, MongoDB and ClickHouse. The analytics team already knows SQL, which matters a lot.",
            ),
            (
                "a",
                "For time-series sensor data with SQL users, Postgres with good partitioning is the low-risk option; ClickHouse is faster for scans but it is another system to run.",
            ),
            (
                "u#pg-decision",
                "Decision made: Postgres 16, with readings partitioned by month. ClickHouse is out for now, maybe later for analytics.",
            ),
            (
                "a#pg-decision-a",
                "Noted: Postgres 16, monthly partitions, ClickHouse deferred.",
            ),
            (
                "u#timescale",
                "We also looked at the TimescaleDB extension but postponed it — legal has to review the licence first.",
            ),
            ("a", "Sensible to wait for legal on the Timescale licence."),
            (
                "u#staging-host",
                "The staging database runs on heron, port 5433, because 5432 is taken by the old reporting instance on that box.",
            ),
            (
                "a#staging-host-a",
                "So staging Postgres is on heron at port 5433, and the reporting instance keeps 5432.",
            ),
            (
                "u#prod-host",
                "Production will be on cormorant, a bigger machine with 256 GB of RAM and NVMe disks.",
            ),
            (
                "a",
                "Production on cormorant, then. Do you want replicas from day one?",
            ),
            (
                "u#replica-order",
                "One streaming replica, on a host Tomasz still has to order.",
            ),
            (
                "a",
                "One replica, to be ordered by Tomasz. I'll keep that in mind.",
            ),
        ],
    },
    SessionSpec {
        id: "s03",
        date: "2026-05-14",
        start: "10:40",
        turns: &[
            (
                "u",
                "Quick one: the queue question got settled in the architecture meeting.",
            ),
            ("a", "Which way did it go?"),
            (
                "u#nats",
                "We go with NATS JetStream instead of Kafka. Kafka was overkill for our volume and Tomasz didn't want to run ZooKeeper or KRaft.",
            ),
            (
                "a#nats-a",
                "NATS JetStream it is — lighter to operate, and its persistence covers the replay need.",
            ),
            (
                "u#volume",
                "Expected volume is about 4,000 messages per second at peak and 600 on average.",
            ),
            (
                "a",
                "That is comfortably within what JetStream handles on one node, but run three nodes for availability.",
            ),
            (
                "u#race-signup",
                "On a different note, I signed up for the Riverside Half Marathon today.",
            ),
            ("a", "Congratulations! When is the race?"),
            (
                "u#race-date",
                "It's on {2026-10-04}. My goal is to finish under two hours.",
            ),
            (
                "a#race-date-a",
                "Under two hours on {2026-10-04} gives you about twenty weeks to train. Do you have a plan?",
            ),
            (
                "u#diet",
                "I'll follow a 16-week plan. And for the nutrition part: remember I'm vegetarian and lactose intolerant, so no whey protein suggestions please.",
            ),
            (
                "a#diet-a",
                "Noted: vegetarian and lactose intolerant. I'll suggest plant-based protein instead.",
            ),
        ],
    },
    SessionSpec {
        id: "s04",
        date: "2026-05-21",
        start: "16:05",
        turns: &[
            (
                "u#ci-slow",
                "The CI pipeline for Tidewater is painfully slow, around 25 minutes per merge request.",
            ),
            (
                "a",
                "Where does the time go — compiling, tests, or waiting for runners?",
            ),
            (
                "u#ci-runner",
                "Mostly compiling. We moved the jobs to the self-hosted runner on kestrel, our build server with 16 cores, and added sccache.",
            ),
            (
                "a",
                "sccache on kestrel should help a lot for incremental builds. What's the new time?",
            ),
            (
                "u#ci-time",
                "Down to about 9 minutes. The remaining pain is one flaky test.",
            ),
            ("a", "Which test?"),
            (
                "u#flaky",
                "ingest_roundtrip times out roughly one run in ten. It starts a NATS server inside the test and sometimes the port isn't ready yet.",
            ),
            (
                "a#flaky-fix",
                "Classic race. Wait for the server's health endpoint before publishing instead of sleeping a fixed time; that usually fixes it.",
            ),
            (
                "u#toolchain",
                "Good idea. We also decided to pin the Rust toolchain to 1.88 in rust-toolchain.toml so builds are reproducible.",
            ),
            ("a", "Pinning is good; bump it deliberately once a quarter."),
            (
                "u",
                "By the way, I saw a kestrel hovering over the car park this morning, which felt fitting.",
            ),
            ("a", "A good omen for the build server."),
        ],
    },
    SessionSpec {
        id: "s05",
        date: "2026-05-28",
        start: "20:15",
        turns: &[
            ("u", "Planning some travel for this year. Two trips so far."),
            ("a", "Tell me about them."),
            (
                "u#wedding",
                "My sister Hannah is getting married in Galway on {2026-08-15}. I'm giving a speech, which terrifies me.",
            ),
            (
                "a#wedding-a",
                "A wedding speech for your sister! We can work on it together closer to {2026-08-15}.",
            ),
            (
                "u#summit",
                "And I submitted a talk to the Sintra Systems Summit in Lisbon, {2026-09-17} to {2026-09-18|%-d}.",
            ),
            (
                "a",
                "Exciting. Do you know yet whether the talk was accepted?",
            ),
            (
                "u#summit-wait",
                "Not yet, they announce in {2026-06-15|%B}. If it's accepted I'll fly out on {2026-09-16|the}.",
            ),
            ("a", "Keep that day free then."),
            (
                "u#passport",
                "Problem: my passport expires in {2026-10-20|%B}, and some airlines want six months of validity left.",
            ),
            (
                "a#passport-a",
                "Then renew it before booking anything. Renewals can take six to eight weeks, so apply in {2026-06-15|%B} at the latest.",
            ),
            (
                "u#seat",
                "Also, when you help me book flights: I always want a window seat, never the aisle.",
            ),
            ("a#seat-a", "Window seat, always. Noted."),
        ],
    },
    SessionSpec {
        id: "s06",
        date: "2026-06-03",
        start: "11:30",
        turns: &[
            (
                "u#dst-symptom",
                "Weird bug: some sensor readings show up an hour in the future.",
            ),
            (
                "a",
                "Only some sensors? That smells like time zones or daylight saving.",
            ),
            (
                "u#dst-scope",
                "Only the ones at the north pier, which got new firmware in March.",
            ),
            ("a", "What timestamp format does the new firmware send?"),
            (
                "u#dst-cause",
                "Found it: the new firmware sends local time without an offset, and we parse it as UTC. Since the clocks changed in March, they're off by one hour.",
            ),
            (
                "a",
                "That explains it. Can the firmware be fixed, or do you need to handle it on ingest?",
            ),
            (
                "u#dst-fix",
                "Firmware fix will take months. So we decided to normalise at ingest: we attach the site's time zone from the device registry and convert to UTC before storing.",
            ),
            (
                "a#dst-check",
                "Good. Also reject readings more than five minutes in the future, so this shows up at once next time.",
            ),
            (
                "u#dst-backfill",
                "Yes. And Priya will write a backfill job to correct the rows already stored since March.",
            ),
            (
                "a",
                "Make sure the backfill is idempotent — run it twice and nothing should change.",
            ),
            (
                "u",
                "Ha, the north pier also lost power twice this week, so there are gaps anyway.",
            ),
            (
                "a",
                "Then mark the gaps explicitly so the analytics team doesn't read them as zero.",
            ),
        ],
    },
    SessionSpec {
        id: "s07",
        date: "2026-06-10",
        start: "09:45",
        turns: &[
            (
                "u#leave",
                "Team news: Priya is going on parental leave from {2026-07-01} until mid-{2026-10-12|%B}.",
            ),
            (
                "a",
                "Congratulations to her. Who covers the backend lead role?",
            ),
            (
                "u#cover",
                "I'll cover the backend decisions, and Tomasz takes her on-call shifts.",
            ),
            (
                "a#cover-a",
                "So you're acting backend lead and Tomasz has her on-call shifts.",
            ),
            (
                "u#newhire",
                "We also have a new hire, Marcus Lindqvist, starting {2026-06-22}. He's a junior engineer from the Gothenburg office.",
            ),
            ("a", "What will Marcus work on first?"),
            (
                "u#marcus-task",
                "The CSV export for the query API. It's small and well scoped.",
            ),
            ("a", "Good first task. Pair with him the first week."),
            (
                "u#one-on-one",
                "Dolores moved our one-on-ones from Mondays to Thursdays at 3pm.",
            ),
            ("a#one-on-one-a", "Thursdays at 15:00 with Dolores, noted."),
            (
                "u",
                "And Ines shared the first dashboard mockups; they look great, very clean.",
            ),
            ("a", "Nice. Any open questions on the mockups?"),
            (
                "u#chart-default",
                "Just whether charts default to the last 24 hours or the last 7 days. We went with 24 hours.",
            ),
            ("a", "The 24-hour view it is."),
        ],
    },
    SessionSpec {
        id: "s08",
        date: "2026-06-17",
        start: "19:30",
        turns: &[
            (
                "u#lease",
                "Personal stuff: my lease ends on {2026-07-31} and I found a new flat in Northgate.",
            ),
            ("a", "Congrats on the new place! What's left to organise?"),
            (
                "u#movers",
                "I booked Bluebird Removals for {2026-07-25}, a Saturday. They quoted 840 euros.",
            ),
            (
                "a",
                "That leaves almost a week of overlap before the lease ends, which is useful for cleaning.",
            ),
            (
                "u#internet",
                "The internet provider needs three weeks to connect the new flat, so I ordered fibre today.",
            ),
            (
                "a",
                "Ordering now should give you internet right around moving day.",
            ),
            (
                "u#dog",
                "The new building allows dogs, which was the main requirement because of Biscuit.",
            ),
            ("a", "Good for Biscuit. How does he handle moves?"),
            (
                "u#dog-anxious",
                "Badly. He gets anxious with boxes everywhere, so he'll stay with my neighbour Sofia on moving day.",
            ),
            (
                "a#dog-anxious-a",
                "Sensible. A calm day at Sofia's beats a day among movers.",
            ),
            (
                "u",
                "Migration of all my stuff in one weekend, wish me luck.",
            ),
            ("a", "Good luck — label the boxes by room, it saves hours."),
        ],
    },
    SessionSpec {
        id: "s09",
        date: "2026-06-24",
        start: "13:10",
        turns: &[
            ("u", "Next big item for Tidewater: the historical data."),
            ("a", "Where does it live now?"),
            (
                "u#legacy",
                "In a legacy MySQL 5.7 database on osprey — about 3 billion rows going back to 2019.",
            ),
            (
                "a",
                "Three billion rows is a serious migration. Online or offline?",
            ),
            (
                "u#copier",
                "We decided against a one-shot dump. Instead a batch copier that moves one month at a time and records a checkpoint after each batch, so it can resume.",
            ),
            (
                "a#copier-a",
                "Resumable month-by-month copies fit the monthly partitions in Postgres nicely.",
            ),
            (
                "u#dryrun",
                "The dry run on the 2019 data took 41 minutes per month of readings.",
            ),
            (
                "a",
                "At 41 minutes a month, roughly 90 months would need about 60 hours. Can you run batches in parallel?",
            ),
            (
                "u#parallel",
                "Up to four in parallel before osprey's disks saturate, so about 16 hours in total.",
            ),
            (
                "a",
                "16 hours fits in a weekend. Keep osprey read-only during the copy.",
            ),
            (
                "u#osprey-retire",
                "After the migration osprey gets decommissioned; it's been out of warranty for two years.",
            ),
            (
                "a",
                "Good riddance. Keep a final backup of it in cold storage anyway.",
            ),
        ],
    },
    SessionSpec {
        id: "s10",
        date: "2026-06-28",
        start: "07:50",
        turns: &[
            (
                "u",
                "Went birdwatching at the estuary with Hannah this morning.",
            ),
            ("a", "Lovely. What did you see?"),
            (
                "u#birds",
                "Two grey herons, a whole row of cormorants drying their wings on the old pier, and an osprey fishing, which was the highlight.",
            ),
            (
                "a",
                "An osprey is a great sighting. They only pass through on migration around here, don't they?",
            ),
            (
                "u",
                "Yes, late summer mostly. Hannah thinks the grebes will be back in the autumn.",
            ),
            (
                "a",
                "You named half your servers after these birds, so you have to keep up.",
            ),
            (
                "u#binoculars",
                "I really need better binoculars; mine are fogging up. Something 8x42 and waterproof.",
            ),
            ("a", "8x42 is the classic all-round choice. Budget?"),
            (
                "u",
                "Under 300 euros. Hannah swears by her old pair, she's had it for twelve years.",
            ),
            (
                "a",
                "There are good waterproof 8x42 models in that range; I can compare a few when you're ready.",
            ),
        ],
    },
    SessionSpec {
        id: "s11",
        date: "2026-07-01",
        start: "08:50",
        turns: &[
            (
                "u#cert-worry",
                "I'm nervous today. I just noticed the TLS certificates on the load balancer expire on {2026-07-09}, and the customer demo is on {2026-07-08}.",
            ),
            ("a", "Cutting it close. Who manages those certificates?"),
            (
                "u#cert-manual",
                "Nobody, really — they were bought by hand two years ago by someone who has left.",
            ),
            (
                "a#acme",
                "Then switch to automated renewal with ACME and Let's Encrypt; the load balancer supports it. Do it this week, not the day before the demo.",
            ),
            (
                "u#cert-plan",
                "Tomasz will switch us to ACME on Friday, and we'll keep the old certificates as a fallback until the new ones are live.",
            ),
            (
                "a",
                "Good. Also add an alert for any certificate expiring within 21 days.",
            ),
            (
                "u#demo-worry",
                "I'm also worried the demo data looks too thin. Halvorsen will want to see at least a month of readings.",
            ),
            (
                "a",
                "Load a month of real readings from the north pier into staging beforehand — and check that the time zone fix is deployed, or the timestamps will look wrong.",
            ),
            (
                "u",
                "Right, the timestamps. Okay. I also have to renew my first aid certification this month, the office asked everyone.",
            ),
            ("a", "Two kinds of certificates in one week, then."),
        ],
    },
    SessionSpec {
        id: "s12",
        date: "2026-07-08",
        start: "17:00",
        turns: &[
            (
                "u#demo-ok",
                "The demo for Halvorsen Shipping went well! The ACME switch worked and nobody noticed a thing.",
            ),
            ("a", "Great news. What did they ask for?"),
            (
                "u#halvorsen-ask",
                "Two things: a CSV export of readings, and a retention policy. Their compliance team needs data kept for at least a year.",
            ),
            (
                "a",
                "The CSV export is already Marcus's task. What retention did you settle on?",
            ),
            (
                "u#retention",
                "We decided on 13 months of raw readings, then downsampled hourly averages kept for five years.",
            ),
            (
                "a#retention-a",
                "13 months raw plus five years of hourly aggregates covers their year with some margin.",
            ),
            (
                "u#halvorsen-contact",
                "Their contact person is Erik Halvorsen, the founder's son, very technical.",
            ),
            (
                "a",
                "Erik Halvorsen as the technical contact. Anything else from the meeting?",
            ),
            (
                "u#pricing",
                "Dolores will send the pricing proposal next week. They want it per sensor, not per gigabyte.",
            ),
            (
                "a",
                "Per-sensor pricing then. I'll remember that when we talk about costs.",
            ),
        ],
    },
    SessionSpec {
        id: "s13",
        date: "2026-07-15",
        start: "18:25",
        turns: &[
            (
                "u#knee",
                "My left knee has been hurting after long runs, on the outer side, especially going downhill.",
            ),
            (
                "a#knee-a",
                "Pain on the outside of the knee on descents is often the iliotibial band. Have you seen anyone?",
            ),
            (
                "u#physio",
                "I have a physio appointment with Dr. Okafor next week.",
            ),
            (
                "a",
                "Good. Until then, shorten your long run and avoid hills.",
            ),
            (
                "u#swim",
                "To keep my fitness up I'll swim twice a week at the Northgate pool instead of the tempo runs.",
            ),
            ("a", "Swimming is a good low-impact substitute."),
            (
                "u#shoes",
                "Should I change shoes? I've done about 700 km in my current pair.",
            ),
            (
                "a#shoes-a",
                "700 km is past the usual life of running shoes; a new pair is worth it, especially with a sore knee.",
            ),
            ("u", "Fine, I'll go to the running shop on Saturday."),
            (
                "a",
                "Try them on in the afternoon, when your feet are slightly larger.",
            ),
        ],
    },
    SessionSpec {
        id: "s14",
        date: "2026-07-22",
        start: "10:15",
        turns: &[
            (
                "u#leak",
                "Production issue: the ingest worker's memory grows by about 200 MB per hour until the container gets OOM-killed.",
            ),
            (
                "a",
                "Steady growth like that is usually a cache or a queue without a bound. What does the heap profile say?",
            ),
            (
                "u#leak-cause",
                "Heaptrack shows it's the per-device state map. Every device that ever sent a reading keeps an entry forever, and the harbour has lots of short-lived test devices.",
            ),
            (
                "a#leak-cause-a",
                "So the map is unbounded. An LRU with a cap, or expiry after inactivity, would fix it.",
            ),
            (
                "u#leak-fix",
                "We capped it with an LRU of 50,000 devices and evict entries idle for more than 6 hours.",
            ),
            (
                "a",
                "That should flatten the curve. Watch the memory graph for a day.",
            ),
            (
                "u#leak-since",
                "The leak has been there since the first release; it only became visible when Halvorsen's test fleet came online.",
            ),
            (
                "a",
                "More devices made it visible. Add a metric for the map size so you see it next time.",
            ),
            (
                "u#oom-restarts",
                "Tomasz counted 14 restarts of the worker in the last week because of it.",
            ),
            ("a", "Did any readings get lost?"),
            (
                "u#no-loss",
                "No, JetStream redelivered everything; the explicit acks saved us.",
            ),
            ("a", "That's the payoff of explicit acknowledgements."),
            (
                "u",
                "Meanwhile the kitchen tap in the new flat is leaking — I got the keys early — so leaks everywhere this week.",
            ),
            (
                "a",
                "Ha. The landlord should fix the tap before you move in.",
            ),
        ],
    },
    SessionSpec {
        id: "s15",
        date: "2026-07-29",
        start: "20:40",
        turns: &[
            (
                "u#moved",
                "Moved in! Bluebird were fast, everything was done by 2pm.",
            ),
            ("a", "Congratulations! How is Biscuit settling in?"),
            (
                "u#biscuit-settle",
                "He spent the first night under the bed, but now he loves the balcony.",
            ),
            ("a", "A good sign."),
            (
                "u#physio-result",
                "I also saw Dr. Okafor: it's IT band syndrome. Two weeks of reduced mileage, hip strength exercises and foam rolling every day.",
            ),
            (
                "a#physio-result-a",
                "Manageable. Clamshells and side planks are good for the hips.",
            ),
            (
                "u#commute",
                "The commute is better too: 20 minutes by bike instead of 45 by bus.",
            ),
            ("a", "Cycling also counts as gentle cross-training."),
            (
                "u#tea",
                "Now that I have a proper kitchen I'm back to loose-leaf tea. I don't drink coffee at all: oolong in the morning, rooibos in the evening.",
            ),
            (
                "a#tea-a",
                "Oolong mornings, rooibos evenings, no coffee — noted.",
            ),
            (
                "u#internet-late",
                "The fibre still isn't connected though; they pushed it to {2026-08-06}.",
            ),
            ("a", "Annoying. Tether from your phone until then."),
        ],
    },
    SessionSpec {
        id: "s16",
        date: "2026-08-05",
        start: "15:00",
        turns: &[
            (
                "u",
                "API design day. We need to settle a few things before the beta.",
            ),
            ("a", "Which decisions are open?"),
            (
                "u#api-versioning",
                "Versioning: we decided on a URL prefix, /v2, rather than headers, because customers test with curl.",
            ),
            (
                "a",
                "A URL prefix is the easiest to debug. Why v2 and not v1?",
            ),
            (
                "u#v1-deprecate",
                "The prototype is v1 and Halvorsen already uses it. We'll deprecate /v1 at the end of the year.",
            ),
            ("a", "Announce the /v1 deprecation early then."),
            (
                "u#pagination",
                "Pagination will be cursor-based, not offset-based, since readings are appended constantly.",
            ),
            (
                "a#pagination-a",
                "Cursors are right for an append-heavy table. Encode the last timestamp in the cursor.",
            ),
            (
                "u#auth",
                "Authentication uses OAuth client credentials; every customer gets a client id and secret per environment.",
            ),
            ("a", "Keep staging and production secrets strictly apart."),
            (
                "u#rate-limit",
                "And a rate limit of 100 requests per second per client, with a burst of 200.",
            ),
            (
                "a#rate-limit-a",
                "100 per second with bursts of 200 — return 429 with a Retry-After header when it's hit.",
            ),
            (
                "u",
                "Ines is redoing the dashboard to use the /v2 endpoints too.",
            ),
            ("a", "Good, then the dashboard is the first real client."),
        ],
    },
    SessionSpec {
        id: "s17",
        date: "2026-08-14",
        start: "20:50",
        turns: &[
            (
                "u#speech",
                "Finishing Hannah's wedding speech tonight; the wedding is tomorrow. I want to tell the story of her teaching me to ride a bike when I was six.",
            ),
            (
                "a",
                "A great opening story. Keep the whole speech under four minutes.",
            ),
            (
                "u#speech-len",
                "It's at five and a half. What should I cut?",
            ),
            (
                "a#speech-cut",
                "Cut the list of her achievements — the guests know them. Keep the bike story, one line about her partner Niamh, and the toast.",
            ),
            (
                "u#niamh",
                "Niamh is wonderful; they met at a climbing gym in Dublin.",
            ),
            (
                "a",
                "Mention the climbing gym — it ties back to Hannah pushing you to try things.",
            ),
            (
                "u#gift",
                "Our gift is a weekend at a cottage in Connemara, shared with my parents.",
            ),
            ("a", "A lovely gift."),
            (
                "u#galway-travel",
                "I flew to Dublin this morning and took the train to Galway; it rained the entire way.",
            ),
            ("a", "Classic Ireland. I hope it clears up tomorrow."),
        ],
    },
    SessionSpec {
        id: "s18",
        date: "2026-08-26",
        start: "09:20",
        turns: &[
            (
                "u#outage",
                "We had an outage yesterday evening: production Postgres on cormorant stopped accepting writes for 47 minutes.",
            ),
            ("a", "What happened?"),
            (
                "u#outage-cause",
                "The disk filled up. WAL archiving to the backup bucket had been failing silently for three days, so WAL files piled up.",
            ),
            (
                "a",
                "Silent archiving failures are nasty. Why didn't an alert fire?",
            ),
            (
                "u#outage-alert",
                "The alert only watched the data directory, not the WAL volume. Tomasz has added an alert on WAL volume usage above 70 percent.",
            ),
            (
                "a",
                "Good. Also alert when archive_command fails; that's the root signal.",
            ),
            (
                "u#outage-creds",
                "The archiving failed because the backup bucket credentials were rotated and nobody updated them on cormorant.",
            ),
            (
                "a#outage-actions",
                "So the action items are: alert on archiving failures, and a checklist for credential rotation.",
            ),
            (
                "u#postmortem",
                "The postmortem is on Friday; I'm writing it up with Tomasz. No data was lost, the ingest queue buffered everything.",
            ),
            (
                "a",
                "JetStream saved you again. Use the blameless format and include the timeline.",
            ),
            ("u", "Honestly I'm exhausted, the on-call week was brutal."),
            ("a", "Take a slow morning tomorrow if you can."),
        ],
    },
    SessionSpec {
        id: "s19",
        date: "2026-09-02",
        start: "19:00",
        turns: &[
            (
                "u#talk-accepted",
                "The Sintra Systems Summit accepted my talk back in {2026-06-15|%B}, and now it's two weeks away.",
            ),
            ("a", "What's the title again?"),
            (
                "u#talk-title",
                "\"Backpressure without tears\" — how Tidewater survives bursts from the harbour sensors.",
            ),
            ("a", "Great title. How long is the slot?"),
            (
                "u#talk-slot",
                "30 minutes including questions, on the second day.",
            ),
            ("a", "Aim for 22 minutes of content then."),
            (
                "u#rehearsal",
                "I rehearsed with Marcus today and it ran 31 minutes. Too long.",
            ),
            (
                "a#rehearsal-a",
                "Cut the JetStream internals section; the audience cares about the patterns, not the configuration.",
            ),
            (
                "u#hotel",
                "The hotel is booked in Alfama, close to the venue, five nights.",
            ),
            ("a", "Alfama is lovely but hilly — careful with the knee."),
            (
                "u#flight",
                "The flight leaves on {2026-09-16} at 7:10, window seat as always.",
            ),
            ("a", "An early flight. Pack the night before."),
        ],
    },
    SessionSpec {
        id: "s20",
        date: "2026-09-21",
        start: "10:00",
        turns: &[
            (
                "u#talk-went",
                "Back from Lisbon. The talk went well, about 120 people, and lots of questions about backpressure in NATS.",
            ),
            ("a", "Congratulations! Any useful contacts?"),
            (
                "u#quayside",
                "A team lead from Quayside Analytics, Joana Serra, wants to try Tidewater for their port cranes data.",
            ),
            (
                "a#quayside-a",
                "A second potential customer. What would they need?",
            ),
            (
                "u#parquet",
                "Parquet export to their data lake instead of CSV. I promised to send her a design note.",
            ),
            (
                "a",
                "Parquet export is a natural extension of Marcus's CSV work.",
            ),
            (
                "u#food",
                "Also, I ate way too many pastéis de nata and had grilled sardines every evening.",
            ),
            ("a", "Sounds like a proper Lisbon trip."),
            (
                "u#porto",
                "I took a day trip to Porto on Saturday and tasted port wine in Gaia.",
            ),
            ("a", "Port in Gaia — a nice ending."),
            (
                "u#talk-video",
                "The organisers will publish the recording in {2026-10-20|%B}.",
            ),
            ("a", "Share it with Dolores when it's out."),
        ],
    },
    SessionSpec {
        id: "s21",
        date: "2026-09-30",
        start: "18:45",
        turns: &[
            (
                "u#taper",
                "Taper week before the Riverside Half. The knee has been fine since the physio exercises.",
            ),
            ("a", "Great. What's your race plan?"),
            (
                "u#pace",
                "Target time 1:55, so about 5:27 per kilometre. I'll start slower for the first three kilometres.",
            ),
            (
                "a#pace-a",
                "A conservative start, then settle in. Load up on pasta and rice the two days before — all vegetarian, no dairy.",
            ),
            ("u#gels", "I'll take three gels, at km 7, 12 and 17."),
            (
                "a",
                "Good spacing. Practise with the same brand on your last run.",
            ),
            (
                "u#bib",
                "Bib number 2417. The start is at 9:00 in Riverside Park.",
            ),
            ("a", "Get there by 8:15 then."),
            ("u", "Hannah might come to cheer."),
            ("a", "Nice, a familiar face at the finish helps."),
        ],
    },
    SessionSpec {
        id: "s22",
        date: "2026-10-07",
        start: "12:30",
        turns: &[
            (
                "u#race-result",
                "Race done on Sunday: 1:58:40. Not 1:55, but under two hours!",
            ),
            (
                "a#race-result-a",
                "Under two hours in your first half marathon — the goal you set in {2026-05-14|%B}. Congratulations!",
            ),
            (
                "u#race-cramp",
                "I cramped at km 18, probably too few electrolytes.",
            ),
            (
                "a",
                "Next time add salt tablets or an electrolyte drink at the water stations.",
            ),
            (
                "u#priya-back",
                "Priya comes back from leave next Monday, {2026-10-12|the}.",
            ),
            (
                "a",
                "Then you hand back the backend lead role. Prepare a summary of what was decided while she was away.",
            ),
            (
                "u#nomad",
                "For Q4 we decided to stay on Nomad and not migrate to Kubernetes this year. Tomasz was relieved.",
            ),
            ("a", "Fewer moving parts. Revisit Kubernetes in the spring?"),
            (
                "u#k8s-spring",
                "Yes, in the spring, once the v2 API is stable.",
            ),
            ("a", "Noted."),
            (
                "u#q4-goals",
                "Q4 goals: ship the v2 API, finish the MySQL migration, and onboard Quayside as a pilot.",
            ),
            ("a", "Three clear goals: v2, migration, Quayside pilot."),
        ],
    },
    SessionSpec {
        id: "s23",
        date: "2026-10-15",
        start: "16:40",
        turns: &[
            (
                "u#secrets-leak",
                "Security review finding: API keys were printed in CI job logs on kestrel because of a debug flag.",
            ),
            (
                "a",
                "How long were they exposed, and who can read those logs?",
            ),
            (
                "u#secrets-exposure",
                "Since {2026-08-10|%B}; only employees can read the logs, but still.",
            ),
            ("a", "Rotate them all and scrub the logs."),
            (
                "u#rotate",
                "We decided to rotate every key tomorrow and move all secrets into Vault, with short-lived tokens for CI.",
            ),
            (
                "a#rotate-a",
                "Vault with short-lived CI tokens is the right long-term fix. Remember the credential checklist from the outage.",
            ),
            (
                "u#scrub",
                "Marcus is writing a script to scrub the old job logs.",
            ),
            ("a", "Check the build artifacts too, not only the logs."),
            (
                "u#pentest",
                "Dolores also booked an external penetration test for {2026-11-16|%B}.",
            ),
            ("a", "Good timing, right after the rotation."),
            ("u", "Feels like every month has a fire."),
            ("a", "At least each fire leaves a better system behind."),
        ],
    },
    SessionSpec {
        id: "s24",
        date: "2026-10-28",
        start: "11:15",
        turns: &[
            (
                "u#kestrel-old",
                "kestrel is dying: two disk failures this month, and builds take twice as long as in the spring.",
            ),
            ("a", "Time for a replacement?"),
            (
                "u#merlin",
                "Yes. Dolores approved 9,000 euros for a new build server. We'll call it merlin.",
            ),
            ("a", "What specs?"),
            (
                "u#merlin-spec",
                "64 cores, 256 GB of RAM, and two 4 TB NVMe drives in a mirror.",
            ),
            ("a", "That will more than halve the build times."),
            (
                "u#merlin-arrival",
                "Delivery is expected mid-{2026-11-16|%B}; kestrel stays as a backup runner until then.",
            ),
            (
                "a",
                "Keep kestrel as the fallback and move the sccache storage first.",
            ),
            (
                "u#replica",
                "The Postgres replica Tomasz ordered finally arrived too; it's called grebe.",
            ),
            (
                "a#replica-a",
                "grebe as the streaming replica of cormorant, got it.",
            ),
        ],
    },
    SessionSpec {
        id: "s25",
        date: "2026-11-04",
        start: "20:00",
        turns: &[
            (
                "u#passport-done",
                "Finally, the new passport arrived today, valid for ten years.",
            ),
            ("a", "Good — the renewal took longer than expected."),
            (
                "u#tromso",
                "I'm planning a winter trip to Tromsø in {2026-12-12|%B} to see the northern lights.",
            ),
            ("a", "Great choice. When exactly?"),
            (
                "u#tromso-dates",
                "From {2026-12-12} to {2026-12-18}, with a husky sledding tour booked on {2026-12-14|the}.",
            ),
            ("a", "Dress in layers; it can be minus fifteen there."),
            (
                "u#tromso-flight",
                "Flights go via Oslo, window seats both ways of course.",
            ),
            ("a", "Window seats, as always."),
            (
                "u#biscuit-sitter",
                "Sofia will look after Biscuit again while I'm away.",
            ),
            ("a", "Biscuit is in good hands."),
        ],
    },
    SessionSpec {
        id: "s26",
        date: "2026-11-12",
        start: "14:50",
        turns: &[
            (
                "u#v2-release",
                "We released the v2 API on Tuesday, {2026-11-10|the}. Halvorsen switched over the same day.",
            ),
            ("a", "Congratulations on shipping v2!"),
            (
                "u#tie-bug",
                "One bug already: cursor pagination skips records when several readings have the same timestamp.",
            ),
            (
                "a#tie-bug-a",
                "The cursor only encodes the timestamp, so ties at a page boundary get skipped.",
            ),
            (
                "u#tie-fix",
                "Exactly. The fix is to add the reading id as a tie-breaker in the cursor and in the ORDER BY.",
            ),
            (
                "a",
                "Timestamp plus id gives a total order, so that fixes it.",
            ),
            (
                "u#hotfix",
                "The hotfix goes out tomorrow morning; Priya reviews it.",
            ),
            (
                "a",
                "Add a test with a page boundary in the middle of identical timestamps.",
            ),
            (
                "u#quayside-pilot",
                "Also, Joana from Quayside confirmed the pilot starts in {2027-01-11|%B}.",
            ),
            ("a", "Good news to end the week."),
        ],
    },
];
