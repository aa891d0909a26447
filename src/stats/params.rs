//! Validated parameters: an `Epsilon` is finite and positive, a `Probability` lies in (0, 1).

use std::fmt;

/// Why a parameter was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    /// Epsilon must be finite and strictly positive.
    #[error("epsilon must be a finite number greater than 0")]
    InvalidEpsilon,
    /// A probability must lie strictly between 0 and 1.
    #[error("a probability must lie strictly between 0 and 1")]
    InvalidProbability,
    /// A width, count or scale must be finite and strictly positive.
    #[error("the value must be a finite number greater than 0")]
    NotPositive,
}

/// A privacy parameter: finite and strictly positive. Nothing downstream re-checks it.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Epsilon(f64);

impl Epsilon {
    /// Accepts a finite epsilon greater than 0; refuses 0, negatives, NaN and infinities.
    pub fn new(value: f64) -> Result<Self, ParamError> {
        if value.is_finite() && value > 0.0 {
            Ok(Self(value))
        } else {
            Err(ParamError::InvalidEpsilon)
        }
    }

    /// The value as a float.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl fmt::Display for Epsilon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A probability strictly between 0 and 1 (a prior fraction, a confidence level).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Probability(f64);

impl Probability {
    /// Accepts a value in the open interval (0, 1).
    pub fn new(value: f64) -> Result<Self, ParamError> {
        if value > 0.0 && value < 1.0 {
            Ok(Self(value))
        } else {
            Err(ParamError::InvalidProbability)
        }
    }

    /// The value as a float.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl fmt::Display for Probability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A finite, strictly positive quantity: an interval half-width, an assumed count, a scale.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Positive(f64);

impl Positive {
    /// Accepts a finite value greater than 0.
    pub fn new(value: f64) -> Result<Self, ParamError> {
        if value.is_finite() && value > 0.0 {
            Ok(Self(value))
        } else {
            Err(ParamError::NotPositive)
        }
    }

    /// The value as a float.
    pub fn get(self) -> f64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epsilon_refuses_non_positive_and_non_finite() {
        for bad in [0.0, -0.0, -0.1, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(Epsilon::new(bad), Err(ParamError::InvalidEpsilon), "{bad}");
        }
        assert_eq!(Epsilon::new(0.1).map(Epsilon::get), Ok(0.1));
    }

    #[test]
    fn probability_is_open_unit_interval() {
        for bad in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
            assert_eq!(
                Probability::new(bad),
                Err(ParamError::InvalidProbability),
                "{bad}"
            );
        }
        assert_eq!(Probability::new(0.3).map(Probability::get), Ok(0.3));
    }
}
