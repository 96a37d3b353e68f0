//! Command records indexed by id. Ids are handed out in sequence, so the records live in a
//! window of slots starting at the oldest unfinished id: inserting, finding and removing are
//! index arithmetic, with no hashing on the hot path.

use std::collections::VecDeque;

#[derive(Debug)]
pub struct Slab<T> {
    /// The id of `slots[0]`.
    base: u64,
    slots: VecDeque<Option<T>>,
    live: usize,
}

impl<T> Slab<T> {
    pub fn new(first_id: u64) -> Self {
        Self {
            base: first_id,
            slots: VecDeque::new(),
            live: 0,
        }
    }

    /// The id the next `push` gets.
    pub fn next_id(&self) -> u64 {
        self.base + self.slots.len() as u64
    }

    pub fn push(&mut self, value: T) -> u64 {
        let id = self.next_id();
        self.slots.push_back(Some(value));
        self.live += 1;
        id
    }

    fn index(&self, id: u64) -> Option<usize> {
        id.checked_sub(self.base)
            .map(|i| i as usize)
            .filter(|&i| i < self.slots.len())
    }

    pub fn get(&self, id: u64) -> Option<&T> {
        self.index(id).and_then(|i| self.slots[i].as_ref())
    }

    pub fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        self.index(id).and_then(|i| self.slots[i].as_mut())
    }

    pub fn remove(&mut self, id: u64) -> Option<T> {
        let value = self.index(id).and_then(|i| self.slots[i].take())?;
        self.live -= 1;
        // Finished records at the front are dropped so the window starts at the oldest live id.
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        Some(value)
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots.iter_mut().filter_map(Option::as_mut)
    }

    /// Live records with their ids, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        let base = self.base;
        self.slots
            .iter()
            .enumerate()
            .filter_map(move |(i, slot)| slot.as_ref().map(|v| (base + i as u64, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_slides_past_finished_ids() {
        let mut slab = Slab::new(1);
        let a = slab.push("a");
        let b = slab.push("b");
        let c = slab.push("c");
        assert_eq!((a, b, c), (1, 2, 3));
        assert_eq!(slab.remove(b), Some("b"));
        assert_eq!(slab.get(b), None);
        assert_eq!(slab.remove(a), Some("a"));
        assert_eq!(slab.slots.len(), 1);
        assert_eq!(slab.get(c), Some(&"c"));
        assert_eq!(slab.remove(99), None);
        assert_eq!(slab.remove(0), None);
        assert_eq!(slab.len(), 1);
        assert_eq!(slab.push("d"), 4);
    }
}
