//! Step similarity and the alignment of two step sequences: Needleman–Wunsch over a
//! similarity matrix, where pairing two steps scores their similarity above a floor and
//! leaving a step unpaired costs a gap penalty, so the alignment keeps the order of both
//! lines and pairs only steps alike enough.

use std::collections::HashMap;

/// Cosine similarity of the two texts' word counts (the store's tokenizer), in [0, 1].
pub fn lexical_similarity(a: &str, b: &str) -> f64 {
    let counts = |t: &str| {
        let mut m: HashMap<String, f64> = HashMap::new();
        for w in crate::store::search::tokenize(t) {
            *m.entry(w).or_default() += 1.0;
        }
        m
    };
    let (ca, cb) = (counts(a), counts(b));
    if ca.is_empty() || cb.is_empty() {
        return if normalized(a) == normalized(b) {
            1.0
        } else {
            0.0
        };
    }
    let dot: f64 = ca
        .iter()
        .filter_map(|(w, x)| cb.get(w).map(|y| x * y))
        .sum();
    let norm = |m: &HashMap<String, f64>| m.values().map(|x| x * x).sum::<f64>().sqrt();
    (dot / (norm(&ca) * norm(&cb))).clamp(0.0, 1.0)
}

/// Cosine of two L2-normalised vectors, clamped to [0, 1].
pub fn vector_similarity(a: &[f32], b: &[f32]) -> f64 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    f64::from(dot).clamp(0.0, 1.0)
}

/// Whitespace-collapsed, lower-cased text: two steps equal under it are identical.
pub fn normalized(t: &str) -> String {
    t.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// One row of an alignment: a pair of step positions, or a step of one side alone.
pub type Aligned = (Option<usize>, Option<usize>);

/// Aligns the rows (side A) and columns (side B) of `sim`: the order-keeping pairing that
/// maximises the sum of `similarity − floor` over pairs minus `gap` per unpaired step.
/// Pairs below `floor` are never made. Between two pairs, A's unpaired steps come first.
pub fn align(sim: &[Vec<f64>], floor: f64, gap: f64) -> Vec<Aligned> {
    let n = sim.len();
    let m = sim.first().map_or(0, Vec::len);
    let gap = gap.max(0.0);
    // score[i][j]: the best alignment of the first i steps of A and j of B.
    let mut score = vec![vec![0.0f64; m + 1]; n + 1];
    for (i, row) in score.iter_mut().enumerate() {
        row[0] = -(i as f64) * gap;
    }
    for (j, cell) in score[0].iter_mut().enumerate() {
        *cell = -(j as f64) * gap;
    }
    for i in 1..=n {
        for j in 1..=m {
            let s = sim[i - 1].get(j - 1).copied().unwrap_or(0.0);
            let diag = if s >= floor {
                score[i - 1][j - 1] + (s - floor)
            } else {
                f64::NEG_INFINITY
            };
            score[i][j] = diag.max(score[i - 1][j] - gap).max(score[i][j - 1] - gap);
        }
    }
    let (mut i, mut j) = (n, m);
    let mut rev: Vec<Aligned> = Vec::with_capacity(n + m);
    while i > 0 || j > 0 {
        if i > 0 && j > 0 {
            let s = sim[i - 1].get(j - 1).copied().unwrap_or(0.0);
            if s >= floor && score[i][j] == score[i - 1][j - 1] + (s - floor) {
                rev.push((Some(i - 1), Some(j - 1)));
                i -= 1;
                j -= 1;
                continue;
            }
        }
        // Walking back, B's gap is taken first so that A's unpaired steps read first.
        if j > 0 && (i == 0 || score[i][j] == score[i][j - 1] - gap) {
            rev.push((None, Some(j - 1)));
            j -= 1;
        } else {
            rev.push((Some(i - 1), None));
            i -= 1;
        }
    }
    rev.reverse();
    rev
}
