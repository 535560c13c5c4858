//! The WebSocket frame vocabulary (AEP-0003 §2) and the discovery document (§3.4).
