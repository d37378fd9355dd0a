//! Test support: `spawn_app()` and an HTTP client whose every response is checked against
//! the contract.

use serde_json::Value;
use std::net::TcpListener;
use std::sync::OnceLock;
use wpds::config::ServeConfig;
use wpds_contract::responses::ResponseChecker;

/// A running server and a client for it.
pub struct TestApp {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    agent: ureq::Agent,
}

/// Starts the real application on a random port, in its own thread and actix system.
pub fn spawn_app() -> TestApp {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a random port");
    let address = listener.local_addr().expect("a bound address");
    let config = ServeConfig::for_address(address);
    let (ready, started) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            let server = wpds::server::start(&config, listener).expect("the server starts");
            ready.send(()).expect("the test is waiting");
            server.await
        })
    });
    started.recv().expect("the server thread started");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .allow_non_standard_methods(true)
        .max_redirects(0)
        .build()
        .into();
    TestApp { base: format!("http://{address}"), agent }
}

fn checker() -> &'static ResponseChecker {
    static CHECKER: OnceLock<ResponseChecker> = OnceLock::new();
    CHECKER.get_or_init(|| ResponseChecker::load().expect("the document's response schemas compile"))
}

/// A response, already checked against the contract.
#[derive(Debug)]
pub struct TestResponse {
    /// HTTP status.
    pub status: u16,
    /// Response headers, names lower-case.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Vec<u8>,
}

impl TestResponse {
    /// The value of header `name` (lower-case), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The `errors[]` of a problem body as `(in, pointer, keyword)`.
    pub fn problem_errors(&self) -> Vec<(String, String, String)> {
        self.json()["errors"]
            .as_array()
            .map(|errors| {
                errors
                    .iter()
                    .map(|e| {
                        let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
                        (s("in"), s("pointer"), s("keyword"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A request being built.
pub struct RequestBuilder<'a> {
    app: &'a TestApp,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
}

impl<'a> RequestBuilder<'a> {
    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sends `body` as `application/json`.
    pub fn json(self, body: &Value) -> Self {
        self.header("content-type", "application/json").raw(serde_json::to_vec(body).expect("JSON"))
    }

    /// Sends `body` as it is (set the content type yourself).
    pub fn raw(mut self, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self
    }

    /// Sends the request and checks the response against the contract.
    pub fn send(self) -> TestResponse {
        let mut request = ureq::http::Request::builder()
            .method(self.method.as_str())
            .uri(format!("{}{}", self.app.base, self.path));
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        let request = request.body(self.body.unwrap_or_default()).expect("a well-formed request");
        let mut response = self.app.agent.run(request).expect("the server answers");
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        let body =
            response.body_mut().with_config().limit(16 * 1024 * 1024).read_to_vec().expect("a readable body");
        let response = TestResponse { status, headers, body };
        check_contract(&self.method, &self.path, &response);
        response
    }
}

/// Checks a response of the contract's routes against the document, and the problem
/// conventions (`traceId` is the `X-Request-Id`, `instance` the path, `type` the code's
/// page, `status` the HTTP status) for every problem.
fn check_contract(method: &str, path: &str, response: &TestResponse) {
    let request_id =
        response.header("x-request-id").unwrap_or_else(|| panic!("{method} {path}: no X-Request-Id"));
    let content_type = response.header("content-type");
    let is_problem = content_type.is_some_and(|c| c.starts_with("application/problem+json"));
    if is_problem {
        let problem = response.json();
        let path_only = path.split('?').next().unwrap_or_default();
        assert_eq!(problem["traceId"], request_id, "{method} {path}: traceId is the X-Request-Id");
        assert_eq!(problem["instance"], path_only, "{method} {path}: instance is the path");
        assert_eq!(problem["status"], response.status, "{method} {path}: status matches");
        assert_eq!(
            problem["type"].as_str(),
            Some(format!("/problems/{}", problem["code"].as_str().unwrap_or_default()).as_str()),
            "{method} {path}: type is the code's page",
        );
        // Storage has not landed: the eleven operations may answer 501 until it does.
        if response.status == 501 {
            assert_eq!(problem["code"], "not_implemented");
            return;
        }
    }
    if checker().operation(method, path).is_none() && !is_problem {
        return; // operational endpoints (probes, docs) are outside the contract
    }
    if let Err(e) = checker().check(method, path, response.status, content_type, &response.body) {
        panic!("the response breaks the contract: {e}\nbody: {}", response.text());
    }
}

impl TestApp {
    /// Starts a request.
    pub fn request(&self, method: &str, path: &str) -> RequestBuilder<'_> {
        RequestBuilder {
            app: self,
            method: method.to_owned(),
            path: path.to_owned(),
            headers: Vec::new(),
            body: None,
        }
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> TestResponse {
        self.request("GET", path).send()
    }

    /// `method path` with a JSON body.
    pub fn send_json(&self, method: &str, path: &str, body: &Value) -> TestResponse {
        self.request(method, path).json(body).send()
    }
}
