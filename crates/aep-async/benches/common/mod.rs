//! What both benches build their input and their sink from.
#![allow(dead_code, clippy::unwrap_used)]

/// One compact envelope line of about 330 bytes, at `seq` of `session` of `agent`.
pub fn event_line(agent: &str, session: &str, seq: usize) -> String {
    format!(
        r#"{{"aep":"0.1","id":"01JBENCH{seq:018}","type":"tool.called","time":"2026-01-01T00:00:00.000Z","source":"aep://bench/agent/{agent}/session/{session}","agent":"{agent}","session":"{session}","seq":{seq},"severity":"notice","capture":"metadata","data":{{"tool":"bash","args":{{"cmd":"ls -la"}}}}}}"#
    )
}

/// A sink that serializes each event into a reused buffer, what `HttpSink::accept` does
/// before queueing, and nothing else.
#[derive(Debug, Default)]
pub struct SerializingSink(std::sync::Mutex<Vec<u8>>);

impl aep_async::Sink for SerializingSink {
    fn accept(&self, event: &aep_core::Event) -> Result<(), aep_async::EmitError> {
        let mut buf = self.0.lock().unwrap();
        buf.clear();
        event.write_json(&mut buf);
        Ok(())
    }
    fn flush(&self) -> aep_async::SinkFuture<'_> {
        Box::pin(async {})
    }
    fn close(&self) -> aep_async::SinkFuture<'_> {
        Box::pin(async {})
    }
}
