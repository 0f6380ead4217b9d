//! The fio side: each job's submitter issues host I/Os up to its queue depth, and
//! blocks (as fio's thread does) when md cannot take the next one yet.

use super::*;

impl<D: Member> Engine<D> {
    /// Whether I/Os go through the jobs' submitters (direct I/O to raid5/6: sync writes,
    /// and reads of a lost block, wait for stripe heads in the submitting thread).
    pub(super) fn gated(&self) -> bool {
        self.sync_writes && matches!(self.geo.level, Level::Raid5 | Level::Raid6)
    }

    /// The fio job whose slot a host I/O came from.
    pub(super) fn job_of(&mut self, host: u32) -> u32 {
        self.slot_job[self.hosts.get(host).slot as usize]
    }

    /// A slot's next I/O: once its job's thread has CPU time for it.
    pub(super) fn issue(&mut self, slot: u32) {
        if self.now >= self.end {
            return;
        }
        let job = self.slot_job[slot as usize] as usize;
        let mut start = self.now.max(self.cpu_free[job]);
        if let Some(gap) = self.rate_gap {
            let due = self.rate_due[job];
            start = start.max(due);
            self.rate_due[job] = due + gap;
        }
        self.cpu_free[job] = start + self.cpu_per_io;
        if start > self.now {
            self.schedule(start, Ev::IssueAfterCpu { slot });
            return;
        }
        self.issue_ready(slot);
    }

    /// A slot's next I/O, its job's thread ready to submit it.
    pub(super) fn issue_ready(&mut self, slot: u32) {
        if self.now >= self.end {
            return;
        }
        if self.gated() {
            let job = self.slot_job[slot as usize] as usize;
            let sub = &mut self.submitters[job];
            if sub.blocked > 0 || sub.resume || !sub.queue.is_empty() {
                sub.queue.push_back(slot);
                return;
            }
        }
        self.issue_now(slot);
    }

    /// A job's submitter is free again: its next waiting I/O goes in, and the one after it
    /// in a later event (after md has handled what this one left), unless it blocks.
    pub(super) fn resume(&mut self, job: u32) {
        let sub = &mut self.submitters[job as usize];
        sub.resume = false;
        if sub.blocked > 0 || self.now >= self.end {
            return;
        }
        let Some(slot) = sub.queue.pop_front() else {
            return;
        };
        self.issue_now(slot);
        self.schedule_resume(job);
    }

    pub(super) fn schedule_resume(&mut self, job: u32) {
        let sub = &mut self.submitters[job as usize];
        if sub.blocked == 0 && !sub.resume && !sub.queue.is_empty() {
            sub.resume = true;
            self.schedule(self.now, Ev::Resume { job });
        }
    }

    pub(super) fn issue_now(&mut self, slot: u32) {
        if let Some(left) = self.issue_left.as_mut() {
            if *left == 0 {
                return;
            }
            *left -= 1;
        }
        let job = self.slot_job[slot as usize] as usize;
        let (start, size) = self.region;
        let blocks = self.blocks;
        let (rng, cursor) = &mut self.jobs[job];
        let write = match self.rw {
            Rw::Read | Rw::RandRead => false,
            Rw::Write | Rw::RandWrite => true,
            Rw::RandRw | Rw::Rw => rng.gen_range(0..100u32) >= self.rwmixread as u32,
        };
        let offset = if self.rw.is_random() {
            start + rng.gen_range(0..blocks) * self.bs
        } else {
            let at = *cursor;
            *cursor = if at + 2 * self.bs > start + size {
                start
            } else {
                at + self.bs
            };
            at
        };
        let host = self.hosts.insert(HostIo {
            slot,
            submit: self.now,
            accepted: self.now,
            write,
            offset,
            len: self.bs,
            remaining: 0,
        });
        self.array_ios[write as usize] += 1;
        if self.barrier_applies() {
            if self.barrier.holds(write, offset) {
                self.barrier.held.push_back(host);
                return;
            }
            self.barrier.enter(offset);
        }
        self.enter_md(host);
    }

    /// A host I/O past raid10's barrier (or on any other level): its bitmap bits, then
    /// its member commands.
    pub(super) fn enter_md(&mut self, host: u32) {
        let h = self.hosts.get(host);
        let (write, offset, len) = (h.write, h.offset, h.len);
        if write && self.bitmap.is_some() {
            self.bitmap_write(host, offset, len);
            return;
        }
        self.dispatch(host, write, offset, len);
    }

    // ------------------------------------------------------------ initial resync
}
