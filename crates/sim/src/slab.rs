//! A slab: a table whose indices stay valid while an item lives and are reused once it
//! is removed. Host I/Os, md parts and in-flight device requests are all tracked by index,
//! so the simulator's hot loop allocates nothing per I/O for bookkeeping; a `Pool` also
//! keeps each entry's buffers for its next user.

pub struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Slab<T> {
    pub fn new() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
    pub fn insert(&mut self, t: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = Some(t);
                i
            }
            None => {
                self.items.push(Some(t));
                (self.items.len() - 1) as u32
            }
        }
    }
    pub fn get(&mut self, i: u32) -> &mut T {
        self.items[i as usize].as_mut().expect("live slab entry")
    }
    pub fn remove(&mut self, i: u32) -> T {
        self.free.push(i);
        self.items[i as usize].take().expect("live slab entry")
    }
    /// No entry is live.
    pub fn is_empty(&self) -> bool {
        self.free.len() == self.items.len()
    }
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab::new()
    }
}

/// Like `Slab`, but entries outlive their use: a released entry keeps its buffers (the
/// `Vec`s inside it) for the next user, so steady-state operation allocates nothing.
pub struct Pool<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T: Default> Pool<T> {
    pub fn new() -> Self {
        Pool {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
    /// An entry to use, holding whatever its last user left: callers reset what they read.
    pub fn alloc(&mut self) -> u32 {
        match self.free.pop() {
            Some(i) => i,
            None => {
                self.items.push(T::default());
                (self.items.len() - 1) as u32
            }
        }
    }
    pub fn get(&mut self, i: u32) -> &mut T {
        &mut self.items[i as usize]
    }
    pub fn release(&mut self, i: u32) {
        self.free.push(i);
    }
}

impl<T: Default> Default for Pool<T> {
    fn default() -> Self {
        Pool::new()
    }
}
