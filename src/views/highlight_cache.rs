//! The cache of highlighted code blocks the markdown view reads: filled off the render path
//! by the app's highlighter, read by [`super::markdown::render`].

use std::collections::{HashMap, VecDeque};

use ratatui::text::Line;

/// How many blocks a [`HighlightCache`] keeps by default.
pub const DEFAULT_CACHE_CAPACITY: usize = 256;
/// Highlighted lines by code block key, bounded: the oldest insertion is evicted first.
#[derive(Debug, Clone)]
pub struct HighlightCache {
    lines: HashMap<u64, Vec<Line<'static>>>,
    order: VecDeque<u64>,
    capacity: usize,
    /// Bumped by every insert: what was drawn before may now have highlighted code.
    generation: u64,
}

impl Default for HighlightCache {
    fn default() -> Self {
        Self::new(DEFAULT_CACHE_CAPACITY)
    }
}

impl HighlightCache {
    /// An empty cache holding at most `capacity` blocks (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            lines: HashMap::with_capacity(capacity.min(64)),
            order: VecDeque::with_capacity(capacity.min(64)),
            capacity,
            generation: 0,
        }
    }

    /// Stores the lines for `key`, returning the key evicted to make room, if any.
    /// Pass an evicted key to the highlighter's `forget` so the block can be highlighted again.
    pub fn insert(&mut self, key: u64, lines: Vec<Line<'static>>) -> Option<u64> {
        self.generation += 1;
        if let Some(existing) = self.lines.get_mut(&key) {
            *existing = lines;
            return None;
        }
        let evicted = if self.lines.len() >= self.capacity {
            self.order.pop_front().inspect(|old| {
                self.lines.remove(old);
            })
        } else {
            None
        };
        self.lines.insert(key, lines);
        self.order.push_back(key);
        evicted
    }

    /// Changes whenever a block is added or replaced.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The highlighted lines for `key`, if cached.
    pub fn get(&self, key: u64) -> Option<&[Line<'static>]> {
        self.lines.get(&key).map(Vec::as_slice)
    }

    /// Whether `key` is cached.
    pub fn contains(&self, key: u64) -> bool {
        self.lines.contains_key(&key)
    }

    /// How many blocks are cached.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}
