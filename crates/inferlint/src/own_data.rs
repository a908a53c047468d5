//! The harness's own data beside the server's: one record per request its client sent,
//! and readings of the server's GPUs.

use inferlint_core::model::client::{ClientRequest, RequestOutcome};

use crate::error::Error;

/// One request as the harness's client saw it. Times are Unix seconds (`SystemTime`),
/// the clock the server's readings carry.
///
/// ```
/// let request = inferlint::RequestRecord::new(1_700_000_000.0, 1_700_000_004.5)
///     .first_token(1_700_000_000.3)
///     .tokens(88, 1_000);
/// assert!(request.succeeded());
/// let failed = inferlint::RequestRecord::new(1_700_000_001.0, 1_700_000_002.0).failed();
/// assert!(!failed.succeeded());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RequestRecord {
    start: f64,
    first_token: Option<f64>,
    end: f64,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    success: bool,
    timed: bool,
}

impl RequestRecord {
    /// A request sent at `start` that ended at `end`, come back whole, within the timed
    /// span.
    pub fn new(start: f64, end: f64) -> RequestRecord {
        RequestRecord {
            start,
            first_token: None,
            end,
            input_tokens: None,
            output_tokens: None,
            success: true,
            timed: true,
        }
    }

    /// When its first token came.
    pub fn first_token(mut self, at: f64) -> RequestRecord {
        self.first_token = Some(at);
        self
    }

    /// Its prompt and output tokens, as the client counted them.
    pub fn tokens(mut self, input: u64, output: u64) -> RequestRecord {
        self.input_tokens = Some(input);
        self.output_tokens = Some(output);
        self
    }

    /// It failed: an error answer, a timeout, a broken stream.
    pub fn failed(mut self) -> RequestRecord {
        self.success = false;
        self
    }

    /// It was sent outside the timed span (a warm-up, a test request): the server
    /// counted it, the client's figures leave it out.
    pub fn untimed(mut self) -> RequestRecord {
        self.timed = false;
        self
    }

    /// Whether it came back whole.
    pub fn succeeded(&self) -> bool {
        self.success
    }

    /// Whether it was within the timed span.
    pub fn is_timed(&self) -> bool {
        self.timed
    }

    pub(crate) fn start(&self) -> f64 {
        self.start
    }

    pub(crate) fn end(&self) -> f64 {
        self.end
    }

    pub(crate) fn input_tokens(&self) -> Option<u64> {
        self.input_tokens
    }

    pub(crate) fn output_tokens(&self) -> Option<u64> {
        self.output_tokens
    }

    /// The record as the checks read a load tool's, or why it cannot be one.
    pub(crate) fn client_request(&self, index: usize) -> Result<ClientRequest, Error> {
        let what = format!("request record {}", index + 1);
        let times = [Some(self.start), self.first_token, Some(self.end)];
        if times.iter().flatten().any(|t| !t.is_finite()) {
            return Err(Error::invalid_input(&what, "a time that is no time"));
        }
        if self.end < self.start {
            return Err(Error::invalid_input(
                &what,
                format!("it ends ({}) before it starts ({})", self.end, self.start),
            ));
        }
        if let Some(first) = self
            .first_token
            .filter(|t| *t < self.start || *t > self.end)
        {
            return Err(Error::invalid_input(
                &what,
                format!(
                    "its first token ({first}) is outside its span ({} to {})",
                    self.start, self.end
                ),
            ));
        }
        Ok(ClientRequest {
            outcome: Some(if self.success {
                RequestOutcome::Completed
            } else {
                RequestOutcome::Failed
            }),
            sent_s: Some(self.start).into(),
            first_token_s: self.first_token.into(),
            end_s: Some(self.end).into(),
            ttft_s: self.first_token.map(|t| t - self.start).into(),
            latency_s: Some(self.end - self.start).into(),
            prompt_tokens: self.input_tokens.into(),
            output_tokens: self.output_tokens.into(),
            ..ClientRequest::default()
        })
    }
}

/// A reading of the server's GPUs taken with a sample of `/metrics` (T21: another
/// process on the server's GPUs, throttling). Leave out what you did not read.
///
/// ```
/// let reading = inferlint::GpuReading::default().util(97.0).other_process(512.0, 3.0);
/// # let _ = reading;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct GpuReading {
    pub(crate) inner: inferlint_core::model::GpuReading,
}

impl GpuReading {
    /// The highest utilisation (percent) of one of the server's GPUs.
    pub fn util(mut self, percent: f64) -> GpuReading {
        self.inner.util = Some(percent);
        self
    }

    /// What processes that are not the server's held on the server's GPUs: memory in
    /// MiB, and the highest share of the streaming multiprocessors (percent) one used.
    pub fn other_process(mut self, mib: f64, sm_percent: f64) -> GpuReading {
        self.inner.other_mib = Some(mib);
        self.inner.other_util = Some(sm_percent);
        self
    }

    /// The clock-event (throttle) reasons NVML reported, as its bit mask.
    pub fn throttle_reasons(mut self, mask: u64) -> GpuReading {
        self.inner.throttle = Some(mask as f64);
        self
    }

    /// The lowest SM clock of the server's GPUs and that GPU's maximum, in MHz.
    pub fn sm_clock(mut self, mhz: f64, max_mhz: f64) -> GpuReading {
        self.inner.sm_mhz = Some(mhz);
        self.inner.sm_max_mhz = Some(max_mhz);
        self
    }
}
