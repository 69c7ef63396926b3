//! `a2app add`, the real binary: discovery from a domain, a page, a catalog or
//! a card of a real served app, and each refusal against small raw servers.

use crate::client::{Home, kanban};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

/// A loopback server answering each request path with a whole raw HTTP
/// response (status line, headers, body) from `answer`.
fn raw_server(answer: impl Fn(&str, &str) -> String + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let own = url.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
            }
            let _ = stream.write_all(answer(&path, &own).as_bytes());
        }
    });
    url
}

fn response(status: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    format!("{head}\r\n{body}")
}

#[test]
fn an_app_is_added_from_its_domain_page_catalog_or_card_and_the_gateway_drives_it() {
    let owner = Home::new();
    let (_dir, server) = kanban(&owner);
    let host = server.url.trim_start_matches("http://").to_owned();
    // Another person, who knows only where the app is.
    let home = Home::new();
    let inputs = [
        host.clone(),
        format!("{}/", server.url),
        format!("{}/.well-known/ai-catalog.json", server.url),
        format!("{}/mcp/server-card", server.url),
    ];
    for (i, input) in inputs.iter().enumerate() {
        let added = home.run(&["--json", "add", input, "--allow-local"]).expect(0).json();
        assert_eq!(
            added,
            json!({"ok": true, "firstContact": i == 0, "added": {"url": server.url, "id": "kanban", "name": "Kanban Board", "card": format!("{}/mcp/server-card", server.url)}}),
            "{input}"
        );
    }
    // Without --allow-local an app on this machine is out of reach, by address or by name.
    let refused = home.run(&["--json", "add", &host]).expect(2).json();
    assert_eq!(refused["error"]["code"], "blocked_address");
    let port = host.rsplit(':').next().unwrap();
    let by_name = home.run(&["--json", "add", &format!("localhost:{port}")]).expect(2).json();
    assert_eq!(by_name["error"]["code"], "blocked_address", "{by_name}");
    // Proxy settings are not used: a proxy would resolve names past the check.
    let dead_proxy = "http://127.0.0.1:1";
    let proxied = [("HTTP_PROXY", dead_proxy), ("HTTPS_PROXY", dead_proxy), ("ALL_PROXY", dead_proxy)];
    home.run_with(&["--json", "add", &host, "--allow-local"], &proxied, None).expect(0);
    // A link carries no credentials, and a password is never shown.
    let with_password = format!("http://alice:s3cret@{host}/");
    let run = home.run(&["--json", "add", &with_password, "--allow-local"]).expect(2);
    assert_eq!(run.json()["error"]["code"], "invalid_address");
    assert!(!run.out().contains("s3cret"), "{}", run.out());

    // The root listing shows it, by URL.
    let listed = home.run(&["--json"]).expect(0).json();
    assert_eq!((listed["apps"].clone(), listed["added"][0]["url"].clone()), (json!([]), json!(server.url)));

    // The gateway drives it now, for reads; forgetting the app removes it.
    let apps = gateway_apps(&home);
    assert_eq!(
        apps,
        json!([{"app": server.url, "local": false, "id": "kanban", "name": "Kanban Board", "url": server.url, "status": "running"}])
    );
    home.run(&[&server.url, "forget"]).expect(0);
    assert_eq!(gateway_apps(&home), json!([]));
    home.run(&["--json"]).expect(1);
}

/// `apps` of a bare gateway in `home`.
fn gateway_apps(home: &Home) -> Value {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_a2app"));
    home.env(&mut cmd);
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "apps", "arguments": {}}}),
    ];
    let mut child = cmd
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for message in &input {
        writeln!(stdin, "{message}").unwrap();
    }
    let stdout = child.stdout.take().unwrap();
    let answer = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .map(|l| serde_json::from_str::<Value>(&l).unwrap())
        .find(|m| m["id"] == 2)
        .unwrap();
    drop(stdin);
    let _ = child.wait();
    answer["result"]["structuredContent"]["apps"].clone()
}

#[test]
fn discovery_refuses_what_it_must_not_follow_or_read() {
    let home = Home::new();
    let code = |url: &str, exit: i32| {
        home.run(&["--json", "add", url, "--allow-local"]).expect(exit).json()["error"]["code"].clone()
    };

    // Five redirects are followed; a sixth is not; nor is a redirect to the cloud metadata address.
    let owner = Home::new();
    let (_dir, server) = kanban(&owner);
    let card = format!("{}/mcp/server-card", server.url);
    let five = raw_server(move |path, _| {
        let n: u32 = path.trim_start_matches("/r").parse().unwrap_or(0);
        let next = if n < 4 { format!("/r{}", n + 1) } else { card.clone() };
        response("302 Found", &[("location", &next)], "")
    });
    let added = home.run(&["--json", "add", &format!("{five}/r0"), "--allow-local"]).expect(0).json();
    assert_eq!(added["added"]["id"], "kanban");
    std::fs::remove_file(home.config_dir().join("connections.json")).unwrap();
    let hops = raw_server(|path, _| {
        let n: u32 = path.trim_start_matches("/r").parse().unwrap_or(0);
        response("302 Found", &[("location", &format!("/r{}", n + 1))], "")
    });
    assert_eq!(code(&format!("{hops}/r0"), 2), "too_many_redirects");
    let metadata =
        raw_server(|_, _| response("302 Found", &[("location", "http://169.254.169.254/latest/meta-data/")], ""));
    assert_eq!(code(&format!("{metadata}/"), 2), "blocked_address");

    // A document over 1 MiB.
    let big =
        raw_server(|_, _| response("200 OK", &[("content-type", "application/json")], &" ".repeat((1 << 20) + 1)));
    assert_eq!(code(&format!("{big}/card"), 2), "too_large");
    // Also when no length is announced: the limit holds while reading.
    let chunked = raw_server(|_, _| {
        let chunk = " ".repeat(64 * 1024);
        let mut body = String::new();
        for _ in 0..17 {
            body.push_str(&format!("{:x}\r\n{chunk}\r\n", chunk.len()));
        }
        body.push_str("0\r\n\r\n");
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n{body}"
        )
    });
    assert_eq!(code(&format!("{chunked}/card"), 2), "too_large");

    // A page that links no catalog; a catalog with two cards is never added whole.
    let catalog_at = server.url.clone();
    let page = raw_server(move |path, _| match path {
        // Were the scripted or commented-out link followed, this would lead to a real app.
        "/c" => response("302 Found", &[("location", &format!("{catalog_at}/.well-known/ai-catalog.json"))], ""),
        _ => response(
            "200 OK",
            &[("content-type", "text/html")],
            "<html><script>var l='<link rel=\"ai-catalog\" href=\"/c\">'</script><!-- <link rel=\"ai-catalog\" href=\"/c\"> --></html>",
        ),
    });
    assert_eq!(code(&format!("{page}/"), 1), "not_discoverable");
    let two = raw_server(|_, own| {
        let entry = |n: u32| json!({"identifier": format!("urn:air:x:mcp:{n}"), "type": "application/mcp-server-card+json", "displayName": format!("App {n}"), "url": format!("{own}/card{n}")});
        response(
            "200 OK",
            &[("content-type", "application/ai-catalog+json")],
            &json!({"specVersion": "1.0", "entries": [entry(1), entry(2)]}).to_string(),
        )
    });
    let several = home.run(&["--json", "add", &two, "--allow-local"]).expect(2).json();
    assert_eq!(several["error"]["code"], "several_cards");
    let names: Vec<&str> =
        several["error"]["cards"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["App 1", "App 2"]);

    // A card may name any address: the app it names is held to the same rules.
    let card = raw_server(|_, _| {
        response(
            "200 OK",
            &[("content-type", "application/mcp-server-card+json")],
            &json!({"remotes": [{"type": "streamable-http", "url": "http://169.254.169.254/mcp"}]}).to_string(),
        )
    });
    assert_eq!(code(&format!("{card}/card"), 2), "blocked_address");
    // A card of an MCP server that is not an A2App.
    let other = raw_server(|path, own| match path {
        "/card" => response(
            "200 OK",
            &[("content-type", "application/mcp-server-card+json")],
            &json!({"remotes": [{"type": "streamable-http", "url": format!("{own}/mcp")}]}).to_string(),
        ),
        _ => response("404 Not Found", &[("content-type", "text/plain")], "no"),
    });
    assert_eq!(code(&format!("{other}/card"), 2), "not_an_app");
    assert!(!home.config_dir().join("connections.json").exists(), "nothing was added");
}
