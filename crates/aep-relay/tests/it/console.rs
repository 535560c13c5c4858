//! Mission control in a real headless Chromium (issue 35): a relay with its console,
//! agents on the SDK (`WsSink`, `ControlTarget`), and the page driven over WebDriver.
//! Without chromium and chromedriver each test skips, saying so (a failure under
//! `AEP_REQUIRE_EXTERNAL=1`, as in CI).

use std::sync::Arc;
use std::time::{Duration, Instant};

use aep_async::control::{ControlTarget, RejectReason};
use aep_async::{EmitOptions, Emitter, WsSinkOptions};
use aep_relay::{Relay, RelayHandle};
use aep_test_support::browser::Browser;
use aep_test_support::external::skip_for;
use fantoccini::elements::Element;
use fantoccini::{Client, Locator};
use serde_json::{json, Value};

const TOKEN: &str = "console-t0ken";

async fn relay() -> RelayHandle {
    Relay::builder()
        .token(TOKEN)
        .console(true)
        .max_sessions(2_000)
        .start()
        .await
        .unwrap()
}

/// The browser on the relay's console, or `None` (skipped) without one.
async fn open(relay: &RelayHandle) -> Option<Browser> {
    if skip_for(Browser::missing().as_deref()) {
        return None;
    }
    let browser = Browser::start(1400, 900).await.unwrap();
    let url = format!("{}/console#token={TOKEN}", relay.url());
    browser.client.goto(&url).await.unwrap();
    Some(browser)
}

async fn post(relay: &RelayHandle, lines: &[Value]) {
    let r = aep_test_support::http::post_ndjson(relay.url(), TOKEN, lines).await;
    assert_eq!(r.status().as_u16(), 202, "{:?}", r.text().await);
}

/// The page or one of its elements: where [`click`] and [`type_in`] look for `css`.
trait Scope {
    async fn css(&self, css: &str) -> Element;
}

impl Scope for Client {
    async fn css(&self, css: &str) -> Element {
        self.find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"))
    }
}

impl Scope for Element {
    async fn css(&self, css: &str) -> Element {
        self.find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"))
    }
}

/// Clicks the element `css` finds in `scope`.
async fn click(scope: &impl Scope, css: &str) {
    scope.css(css).await.click().await.unwrap();
}

/// Types `text` into the element `css` finds in `scope`.
async fn type_in(scope: &impl Scope, css: &str, text: &str) {
    scope.css(css).await.send_keys(text).await.unwrap();
}

fn event(id: &str, ty: &str, session: &str, seq: u64, data: Value) -> Value {
    json!({"aep": "0.1", "id": id, "type": ty, "time": "2026-07-22T06:00:00.000Z",
        "source": "aep://test/agent/a", "agent": "agent-a", "session": session, "seq": seq,
        "data": data})
}

async fn wait_css(c: &Client, css: &str, within: Duration) -> fantoccini::elements::Element {
    c.wait()
        .at_most(within)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css} never appeared: {e}"))
}

async fn wait_gone(c: &Client, css: &str, within: Duration) {
    let deadline = Instant::now() + within;
    while c.find(Locator::Css(css)).await.is_ok() {
        assert!(Instant::now() < deadline, "{css} never went away");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `css`'s text satisfies `ok`.
async fn wait_text(c: &Client, css: &str, within: Duration, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + within;
    let mut last = None;
    loop {
        if let Ok(e) = c.find(Locator::Css(css)).await {
            if let Ok(text) = e.text().await {
                if ok(&text) {
                    return text;
                }
                last = Some(text);
            }
        }
        if Instant::now() >= deadline {
            let page = c
                .execute("return document.querySelector('main').outerHTML + ' STATUS ' + document.querySelector('#status').textContent", vec![])
                .await;
            panic!("{css} never showed what was expected: {last:?}; page: {page:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_appears_live_its_timeline_folds_runs_and_tools_and_event_text_stays_text() {
    let relay = relay().await;
    let Some(browser) = open(&relay).await else {
        return;
    };
    let c = &browser.client;
    wait_text(c, "#status", Duration::from_secs(20), |t| t == "live").await;
    let hostile = "<img src=x id=pwned onerror=alert(1)>";
    let tool = |id: &str, ty: &str, seq| {
        let mut e = event(
            id,
            ty,
            "live-1",
            seq,
            json!({"tool": {"name": hostile, "call_id": "c1"}}),
        );
        e["run"] = json!("r1");
        e
    };
    let mut run = event("e1", "run.started", "live-1", 1, json!({}));
    run["run"] = json!("r1");
    post(
        &relay,
        &[
            event("e0", "session.started", "live-1", 0, json!({})),
            run,
            tool("e2", "tool.requested", 2),
            // seq 3 and 4 never arrive: a gap
            tool("e5", "tool.completed", 5),
        ],
    )
    .await;
    let row = wait_css(
        c,
        r#"tr[data-session="live-1"][data-pos="0:5"]"#,
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(
        row.attr("data-status").await.unwrap().as_deref(),
        Some("running")
    );
    click(&row, "button").await;
    // the timeline: the run folded, the tool call inside it, the gap said
    let tool_row = wait_css(
        c,
        r#"#timeline li[data-tool="c1"]"#,
        Duration::from_secs(20),
    )
    .await;
    let summary = tool_row
        .find(Locator::Css("summary"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        summary.contains(hostile) && summary.contains("completed"),
        "{summary}"
    );
    let gap = wait_css(c, "#timeline li.gap", Duration::from_secs(5)).await;
    assert!(gap.text().await.unwrap().contains("3–4"));
    // the hostile name is text: no element came of it
    assert!(c.find(Locator::Id("pwned")).await.is_err());
    // an event's JSON on demand
    let first = wait_css(
        c,
        r#"#timeline li[data-id="e0"] button"#,
        Duration::from_secs(5),
    )
    .await;
    first.click().await.unwrap();
    let json = wait_text(
        c,
        r#"#timeline li[data-id="e0"] pre"#,
        Duration::from_secs(5),
        |t| !t.is_empty(),
    )
    .await;
    assert!(json.contains("\"session.started\""), "{json}");
    // a filter that excludes it, then one that keeps it
    let agent = c
        .find(Locator::Css("#filters input[name=agent]"))
        .await
        .unwrap();
    agent.send_keys("nobody").await.unwrap();
    wait_gone(c, r#"tr[data-session="live-1"]"#, Duration::from_secs(10)).await;
    agent.clear().await.unwrap();
    type_in(c, "#filters input[name=type]", "tool.*").await;
    wait_css(c, r#"tr[data-session="live-1"]"#, Duration::from_secs(10)).await;
    browser.close().await;
    relay.shutdown().await.unwrap();
}

/// An agent on the SDK holding `session`, whose target accepts an answer to its form
/// only when it names the required field (AEP-0006: an emitter rejects an answer that
/// does not cover a required field); each accepted command goes to the channel, for
/// the test to resolve the request when it has seen the ack.
async fn form_agent(
    url: &str,
    session: &str,
) -> (
    Emitter,
    Arc<aep_async::SessionEmitter>,
    String,
    tokio::sync::mpsc::UnboundedReceiver<aep_core::Event>,
) {
    let (accepted, rx) = tokio::sync::mpsc::unbounded_channel();
    let target = ControlTarget::builder(["control.attention.respond", "control.cancel"]).handler(
        move |cmd| {
            let accepted = accepted.clone();
            async move {
                let command = cmd.event().clone();
                let answer = command
                    .data()
                    .and_then(|d| d.get("answer").cloned())
                    .unwrap_or(Value::Null);
                let named = answer["values"]["name"]
                    .as_str()
                    .is_some_and(|n| !n.is_empty());
                if !named {
                    let _ = cmd.reject(
                        RejectReason::Invalid,
                        "required field `name` is not answered",
                    );
                    return;
                }
                let _ = cmd.accept();
                let _ = accepted.send(command);
            }
        },
    );
    let options = WsSinkOptions::new("form-agent", "host/1").command_hook(target.clone());
    let sink = aep_async::Client::new(url)
        .token(TOKEN)
        .ws_sink(options)
        .unwrap();
    let emitter = Emitter::new("form-agent", "host", sink);
    let s = target.attach(emitter.session(session));
    s.emit("session.started", json!({})).unwrap();
    let asked = s
        .emit_with(
            "attention.requested",
            json!({"kind": "form", "prompt": "Configure the <b>deployment</b>",
                "fields": [
                    {"id": "name", "type": "string", "label": "Service name", "required": true},
                    {"id": "replicas", "type": "number", "label": "Replicas", "min": 1, "max": 9},
                    {"id": "region", "type": "select", "label": "Region", "other": true,
                     "choices": [{"id": "eu", "label": "EU"}, {"id": "us", "label": "US"}]}
                ],
                "respond_via": ["control"]}),
            EmitOptions::new()
                .subject("deploy-form")
                .severity(aep_core::Severity::Notice),
        )
        .unwrap();
    emitter.flush().await;
    (emitter, s, asked.id().to_owned(), rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attention_request_is_answered_from_the_inbox_a_nack_shown_and_an_ack_clears_it() {
    let relay = relay().await;
    let Some(browser) = open(&relay).await else {
        return;
    };
    let c = &browser.client;
    let (emitter, session, request, mut accepted) = form_agent(relay.url(), "form-1").await;
    click(c, r#".tab[data-view="inbox"]"#).await;
    let card_css = format!(r#"#inbox li[data-request="{request}"]"#);
    let card = wait_css(c, &card_css, Duration::from_secs(20)).await;
    let prompt = card
        .find(Locator::Css(".prompt"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(prompt, "Configure the <b>deployment</b>");
    // the form of its fields: a required text field, a number with its bounds, a
    // select with other free text
    let name = card
        .find(Locator::Css("input[data-field=name]"))
        .await
        .unwrap();
    assert_eq!(
        name.attr("aria-required").await.unwrap().as_deref(),
        Some("true")
    );
    let replicas = card
        .find(Locator::Css("input[data-field=replicas]"))
        .await
        .unwrap();
    assert_eq!(replicas.attr("max").await.unwrap().as_deref(), Some("9"));
    assert_eq!(
        card.find_all(Locator::Css("input[data-field=region]"))
            .await
            .unwrap()
            .len(),
        3
    );
    // the roster shows the agent and what it accepts
    // an answer without the required field: the agent nacks, the page says so, the
    // request stays
    click(&card, "button[type=submit]").await;
    let outcome = wait_text(
        c,
        &format!("{card_css} .outcome"),
        Duration::from_secs(20),
        |t| t.starts_with("rejected"),
    )
    .await;
    assert!(
        outcome.contains("invalid") && outcome.contains("required field `name`"),
        "{outcome}"
    );
    assert!(c.find(Locator::Css(&card_css)).await.is_ok());
    // a full answer: acked, then the agent resolves it and it leaves the inbox
    name.send_keys("billing").await.unwrap();
    replicas.send_keys("3").await.unwrap();
    click(&card, "input[value=eu]").await;
    click(&card, "button[type=submit]").await;
    let outcome = wait_text(
        c,
        &format!("{card_css} .outcome"),
        Duration::from_secs(20),
        |t| t.starts_with("accepted"),
    )
    .await;
    assert!(outcome.contains("ack"), "{outcome}");
    // what reached the agent: the page's answer, typed by its fields
    let command = accepted.recv().await.unwrap();
    assert_eq!(command.subject(), Some(request.as_str()));
    let answer = command.data().unwrap()["answer"].clone();
    assert_eq!(
        answer,
        json!({"values": {"name": "billing", "replicas": 3, "region": "eu"}})
    );
    let opts = EmitOptions::new().subject(&request).cause(command.id());
    session
        .emit_with(
            "attention.answered",
            json!({"answer": answer, "via": "control"}),
            opts,
        )
        .unwrap();
    crate::common::resolve_answered(&session, &request, command.id());
    emitter.flush().await;
    wait_gone(c, &card_css, Duration::from_secs(20)).await;
    // the roster: the agent, its session and the commands it accepts
    click(c, r#".tab[data-view="roster"]"#).await;
    let row = wait_css(
        c,
        r#"#roster tr[data-agent="form-agent"]"#,
        Duration::from_secs(20),
    )
    .await;
    let text = row.text().await.unwrap();
    assert!(
        text.contains("form-1") && text.contains("control.attention.respond"),
        "{text}"
    );
    emitter.close().await;
    browser.close().await;
    relay.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_events_over_a_thousand_sessions_load_without_freezing_the_page() {
    let relay = relay().await;
    if skip_for(Browser::missing().as_deref()) {
        return;
    }
    for chunk in 0..10 {
        let mut lines = Vec::with_capacity(10_000);
        for s in chunk * 100..(chunk + 1) * 100 {
            let session = format!("load-{s:04}");
            for seq in 0..100u64 {
                let ty = if seq == 0 {
                    "session.started"
                } else {
                    "progress.status"
                };
                lines.push(event(
                    &format!("{session}-{seq}"),
                    ty,
                    &session,
                    seq,
                    json!({"message": "working"}),
                ));
            }
        }
        post(&relay, &lines).await;
    }
    let Some(browser) = open(&relay).await else {
        return;
    };
    let c = &browser.client;
    wait_text(c, "#count-sessions", Duration::from_secs(120), |t| {
        t == "1000"
    })
    .await;
    // the page answered scripts all along, and no task held it for long
    let longest = c
        .execute(
            "return new Promise((done) => { let max = 0; new PerformanceObserver((l) => { for (const e of l.getEntries()) max = Math.max(max, e.duration); }).observe({type: 'longtask', buffered: true}); setTimeout(() => done(max), 200); });",
            vec![],
        )
        .await
        .unwrap();
    let longest = longest.as_f64().unwrap_or(0.0);
    assert!(longest < 5_000.0, "the page froze for {longest} ms");
    // and it still works: a row opens its timeline
    let row = wait_css(
        c,
        r#"tr[data-session="load-0500"] button"#,
        Duration::from_secs(10),
    )
    .await;
    row.click().await.unwrap();
    wait_css(
        c,
        r#"#timeline li[data-id="load-0500-99"]"#,
        Duration::from_secs(30),
    )
    .await;
    browser.close().await;
    relay.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_refused_forgotten_and_asked_for_and_no_url_ever_holds_a_token() {
    let relay = relay().await;
    if skip_for(Browser::missing().as_deref()) {
        return;
    }
    let browser = Browser::start(1200, 800).await.unwrap();
    let c = &browser.client;
    c.goto(&format!("{}/console#token=not-{TOKEN}", relay.url()))
        .await
        .unwrap();
    wait_text(c, "#status", Duration::from_secs(20), |t| {
        t == "the relay refused the token"
    })
    .await;
    wait_text(c, "#login-error", Duration::from_secs(5), |t| {
        t.contains("refused")
    })
    .await;
    assert!(c
        .find(Locator::Id("login"))
        .await
        .unwrap()
        .is_displayed()
        .await
        .unwrap());
    // the fragment left the address bar at once, the refused token the tab's storage
    let url = c.current_url().await.unwrap();
    assert!(url.fragment().is_none(), "{url}");
    let kept = c
        .execute("return sessionStorage.getItem('aep-token')", vec![])
        .await
        .unwrap();
    assert_eq!(kept, Value::Null);
    // the right one, typed into the form: live, and kept for this tab only
    c.find(Locator::Id("token"))
        .await
        .unwrap()
        .send_keys(TOKEN)
        .await
        .unwrap();
    click(c, "#login button[type=submit]").await;
    wait_text(c, "#status", Duration::from_secs(20), |t| t == "live").await;
    let kept = c
        .execute("return sessionStorage.getItem('aep-token')", vec![])
        .await
        .unwrap();
    assert_eq!(kept, json!(TOKEN));
    // a reload reads it from the tab, not from any URL
    c.refresh().await.unwrap();
    wait_text(c, "#status", Duration::from_secs(20), |t| t == "live").await;
    let urls = c
        .execute(
            "return performance.getEntriesByType('resource').map((e) => e.name).concat([location.href])",
            vec![],
        )
        .await
        .unwrap();
    let urls = urls.as_array().unwrap();
    assert!(urls.len() >= 3, "{urls:?}");
    for u in urls {
        let u = u.as_str().unwrap();
        assert!(!u.contains(TOKEN) && !u.contains("token="), "{u}");
    }
    browser.close().await;
    relay.shutdown().await.unwrap();
}

/// Field ids that name a form's own members, labels and a prompt that are markup, and
/// an id `__proto__`: the card draws them as text and the form still answers with
/// every one of them as a member of `values`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_field_ids_and_labels_stay_data_and_the_form_still_answers() {
    let relay = relay().await;
    let Some(browser) = open(&relay).await else {
        return;
    };
    let c = &browser.client;
    let (target, emitter, mut commands) = crate::common::accepting_agent(
        relay.url(),
        TOKEN,
        ("hostile-agent", "host"),
        &["control.attention.respond"],
    );
    let s = target.attach(emitter.session("hostile-1"));
    let img = "<img src=x id=pwned onerror=alert(1)>";
    let asked = s
        .emit(
            "attention.requested",
            json!({"kind": "form", "prompt": format!("<script>alert(1)</script>{img}"),
            "fields": [
                {"id": "append", "type": "string", "label": img, "required": true},
                {"id": "addEventListener", "type": "boolean", "label": "<b>on</b>"},
                {"id": "__proto__", "type": "number", "label": "n"},
                {"id": "submit", "type": "select", "label": "pick",
                 "choices": [{"id": "c1", "label": img}, {"id": "c2", "label": "two"}]}
            ]}),
        )
        .unwrap();
    emitter.flush().await;
    click(c, r#".tab[data-view="inbox"]"#).await;
    let card_css = format!(r#"#inbox li[data-request="{}"]"#, asked.id());
    let card = wait_css(c, &card_css, Duration::from_secs(20)).await;
    let text = card.text().await.unwrap();
    assert!(
        text.contains("<script>alert(1)</script>") && text.contains(img),
        "{text}"
    );
    assert!(c.find(Locator::Id("pwned")).await.is_err());
    assert!(card.find(Locator::Css("b")).await.is_err());
    type_in(&card, "input[data-field=append]", "a").await;
    click(&card, "input[data-field=addEventListener]").await;
    type_in(&card, "input[data-field=__proto__]", "3").await;
    click(&card, "input[data-field=submit][value=c1]").await;
    click(&card, "button[type=submit]").await;
    wait_text(
        c,
        &format!("{card_css} .outcome"),
        Duration::from_secs(20),
        |t| t.starts_with("accepted"),
    )
    .await;
    let command = commands.recv().await.unwrap();
    assert_eq!(
        command.data().unwrap()["answer"],
        json!({"values": {"append": "a", "addEventListener": true, "__proto__": 3, "submit": "c1"}})
    );
    emitter.close().await;
    browser.close().await;
    relay.shutdown().await.unwrap();
}
