//! The members' command trace (`raidlab sim --trace FILE`): every command the simulated
//! members were handed, when, and when it completed — what `blktrace` or the kernel's
//! `block_rq_complete` events show of a real array, so a simulated run can be set beside
//! a measured one command by command (the VM lab's `RAIDLAB_VM_TRACE`).

use super::*;
use std::io::Write;

/// Who sent a member command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The workload's I/O as md maps it (raid5/6's stripe reads and writes included).
    Host,
    /// md's sync thread: the initial resync or a recovery.
    Sync,
    /// md's write-intent bitmap pages.
    Bitmap,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Host => "host",
            Source::Sync => "sync",
            Source::Bitmap => "bitmap",
        }
    }
}

/// One member command.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberCommand {
    /// When the member was handed it (after the host adapter, where the plan has one).
    pub queued: Nanos,
    /// When it completed (`None`: still in flight when the run ended).
    pub done: Option<Nanos>,
    pub member: u32,
    pub write: bool,
    /// Member byte offset and length.
    pub offset: u64,
    pub len: u64,
    pub source: Source,
}

/// The trace being recorded: the commands in the order handed over, and where each one
/// in flight is, by its tag.
#[derive(Debug, Default)]
pub(super) struct Trace {
    pub(super) commands: Vec<MemberCommand>,
    in_flight: HashMap<u64, usize>,
}

impl<D: Member> Engine<D> {
    /// Record every member command of the run ([`SimRun::trace`]).
    pub fn traced(mut self) -> Self {
        self.trace = Some(Box::default());
        self
    }

    /// A member was handed `op`.
    #[inline(never)]
    pub(super) fn trace_queued(&mut self, disk: u32, op: &MemberOp) {
        let source = if op.tag & dispatch::MERGED != 0 {
            Source::Host
        } else {
            match self.parts.get(op.tag as u32).job {
                Job::Host => Source::Host,
                Job::Resync => Source::Sync,
                Job::BitmapFlush | Job::BitmapClear => Source::Bitmap,
            }
        };
        let now = self.now;
        let t = self.trace.as_mut().expect("tracing");
        t.in_flight.insert(op.tag, t.commands.len());
        t.commands.push(MemberCommand {
            queued: now,
            done: None,
            member: disk,
            write: op.write,
            offset: op.offset,
            len: op.len,
            source,
        });
    }

    /// The command tagged `tag` completed.
    #[inline(never)]
    pub(super) fn trace_done(&mut self, tag: u64) {
        let now = self.now;
        let t = self.trace.as_mut().expect("tracing");
        if let Some(i) = t.in_flight.remove(&tag) {
            t.commands[i].done = Some(now);
        }
    }
}

/// Write a trace as CSV: one line per command, times in seconds from the start of the run
/// (the workload's ramp included), offsets and lengths in bytes.
pub fn write_csv(commands: &[MemberCommand], out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "queued_s,done_s,member,op,offset,bytes,source")?;
    for c in commands {
        let done = c
            .done
            .map(|d| format!("{:.6}", d.as_secs_f64()))
            .unwrap_or_default();
        writeln!(
            out,
            "{:.6},{done},{},{},{},{},{}",
            c.queued.as_secs_f64(),
            c.member,
            if c.write { "W" } else { "R" },
            c.offset,
            c.len,
            c.source.as_str()
        )?;
    }
    Ok(())
}
