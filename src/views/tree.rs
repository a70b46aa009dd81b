//! Moving through a tree flattened into rows, shared by the Think graph and the MCP ledger:
//! the selection, opening and closing rows, and keeping the selection in view. Part of the
//! view models: the app moves the cursor, the views draw the rows around it.

/// A row of a flattened tree.
pub trait TreeRow {
    type Key: Copy;
    fn key(&self) -> Self::Key;
    fn depth(&self) -> u8;
    /// Whether the row has children to show or hide.
    fn expandable(&self) -> bool;
    fn expanded(&self) -> bool;
}

/// A tree shown as rows with a selected row and a first row on screen. Implementors give
/// access to the rows and the cursor and say how a row opens; the moves come with it.
pub trait TreeCursor {
    type Row: TreeRow;

    fn rows(&self) -> &[Self::Row];
    /// The selected row and the first row shown.
    fn cursor(&mut self) -> (&mut usize, &mut usize);
    /// Opens or closes `key`'s row and flattens the tree again, keeping the selected row.
    fn set_open(&mut self, key: <Self::Row as TreeRow>::Key, open: bool);

    /// Moves the selection by `delta` rows, stopping at either end.
    fn move_by(&mut self, delta: isize) {
        let n = self.rows().len();
        if n == 0 {
            return;
        }
        let (selected, _) = self.cursor();
        *selected = (*selected as isize + delta).clamp(0, n as isize - 1) as usize;
    }

    fn select_first(&mut self) {
        *self.cursor().0 = 0;
    }

    fn select_last(&mut self) {
        let last = self.rows().len().saturating_sub(1);
        *self.cursor().0 = last;
    }

    /// Opens the selected row; on an open row moves to its first child.
    fn expand(&mut self) {
        let at = *self.cursor().0;
        let Some(row) = self.rows().get(at) else {
            return;
        };
        match (row.expandable(), row.expanded()) {
            (true, false) => {
                let key = row.key();
                self.set_open(key, true);
            }
            (true, true) => self.move_by(1),
            _ => {}
        }
    }

    /// Closes the selected row, or moves to its parent.
    fn collapse(&mut self) {
        let at = *self.cursor().0;
        let rows = self.rows();
        let Some(row) = rows.get(at) else {
            return;
        };
        if row.expandable() && row.expanded() {
            let key = row.key();
            self.set_open(key, false);
        } else if let Some(parent) = rows[..at].iter().rposition(|r| r.depth() < row.depth()) {
            *self.cursor().0 = parent;
        }
    }

    /// Keeps the selection inside a window of `height` rows and returns the first row shown.
    fn scroll_into_view(&mut self, height: usize) -> usize {
        let n = self.rows().len();
        let (selected, offset) = self.cursor();
        if height == 0 {
            return *offset;
        }
        if *selected < *offset {
            *offset = *selected;
        } else if *selected >= *offset + height {
            *offset = *selected + 1 - height;
        }
        *offset = (*offset).min(n.saturating_sub(1));
        *offset
    }
}

/// Implements [`TreeRow`] for `$row` (a struct with `key`, `depth`, `expandable` and
/// `expanded` fields) and [`TreeCursor`] for `$model` (with `rows`, `selected` and `offset`
/// fields, and an `open_row(key, open)` method that opens or closes a row and flattens again).
macro_rules! flat_tree {
    ($model:ty, $row:ty, $key:ty) => {
        impl $crate::views::tree::TreeRow for $row {
            type Key = $key;
            fn key(&self) -> $key {
                self.key
            }
            fn depth(&self) -> u8 {
                self.depth
            }
            fn expandable(&self) -> bool {
                self.expandable
            }
            fn expanded(&self) -> bool {
                self.expanded
            }
        }

        impl $crate::views::tree::TreeCursor for $model {
            type Row = $row;
            fn rows(&self) -> &[$row] {
                &self.rows
            }
            fn cursor(&mut self) -> (&mut usize, &mut usize) {
                (&mut self.selected, &mut self.offset)
            }
            fn set_open(&mut self, key: $key, open: bool) {
                self.open_row(key, open);
            }
        }
    };
}
pub(crate) use flat_tree;
