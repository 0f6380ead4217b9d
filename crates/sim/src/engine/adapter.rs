//! Between md and the devices: a member command goes to its device at once, or waits
//! for one of the host adapter's slots (`host_queue`); completions come back in order.

use super::*;

impl<D: Member> Engine<D> {
    /// Handle, in order, the member commands device calls completed since the `done`
    /// stack was `base` long (their wake-ups are already in the event queue). Handlers
    /// nested inside leave the stack as they found it, so the entries stay put.
    pub(super) fn complete_from(&mut self, base: usize) {
        let end = self.done.len();
        for i in base..end {
            let tag = self.done[i];
            if self.trace.is_some() {
                self.trace_done(tag);
            }
            if self.adapter.limited() {
                self.adapter_release();
            }
            self.op_done(tag);
        }
        debug_assert_eq!(self.done.len(), end);
        self.done.truncate(base);
    }

    /// Member `disk`, and where what it asks for goes: its wake-ups into the event queue,
    /// what it completes onto the `done` stack.
    #[inline(always)]
    pub(super) fn member(&mut self, disk: u32) -> (&mut D, Out<'_, Sched<'_>>) {
        let out = Out {
            wakes: Sched {
                heap: &mut self.heap,
                seq: &mut self.seq,
                disk,
            },
            done: &mut self.done,
        };
        (&mut self.devices[disk as usize], out)
    }

    /// Hand a command to member `disk` now.
    #[inline]
    pub(super) fn device_submit(&mut self, disk: u32, op: MemberOp) {
        if self.trace.is_some() {
            self.trace_queued(disk, &op);
        }
        let now = self.now;
        let (device, mut out) = self.member(disk);
        device.submit(now, op, &mut out);
    }

    /// Hand a command to a member, through the host adapter when the plan has one.
    #[inline]
    pub(super) fn member_submit(&mut self, disk: u32, op: MemberOp) {
        if self.adapter.limited() {
            self.adapter_submit(disk, op);
        } else {
            self.device_submit(disk, op);
        }
    }

    /// `member_submit` behind a host adapter: queue the command while all the adapter's
    /// slots are taken. Out of line: only plans with `host_queue` come here.
    #[inline(never)]
    pub(super) fn adapter_submit(&mut self, disk: u32, op: MemberOp) {
        if self.adapter.busy == self.adapter.slots {
            self.adapter.waiting.push_back((disk, op));
            return;
        }
        self.adapter.busy += 1;
        self.device_submit(disk, op);
    }

    /// A member completed a command: its slot goes to the longest-waiting command.
    #[inline(never)]
    pub(super) fn adapter_release(&mut self) {
        self.adapter.busy -= 1;
        if let Some((disk, op)) = self.adapter.waiting.pop_front() {
            let base = self.done.len();
            self.adapter_submit(disk, op);
            self.complete_from(base);
        }
    }
}
