//! The subscription model: type patterns, lifecycle, delivery modes, cursors.
