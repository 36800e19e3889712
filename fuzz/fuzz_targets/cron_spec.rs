//! Fuzzes the cron spec front end through its public path, `Scheduler::register`: croner
//! expressions, `@every <duration>`, descriptors and `TZ=`/`CRON_TZ=` prefixes. Any spec must be
//! either refused with an error or accepted with a next fire time; never a panic or a hang.
#![no_main]

use asynq_core::{Task, TaskOptions};
use asynq_memory::MemoryBroker;
use asynq_scheduler::{Scheduler, SchedulerConfig};
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static SCHEDULER: LazyLock<Scheduler> = LazyLock::new(|| {
    Scheduler::new(MemoryBroker::new(), SchedulerConfig::default()).expect("the default configuration is valid")
});

fuzz_target!(|data: &[u8]| {
    let Ok(spec) = std::str::from_utf8(data) else { return };
    if let Ok(id) = SCHEDULER.register(spec, Task::new("fuzz", ""), TaskOptions::new()) {
        let _ = SCHEDULER.entries();
        SCHEDULER.unregister(&id).expect("a registered entry can be removed");
    }
});
