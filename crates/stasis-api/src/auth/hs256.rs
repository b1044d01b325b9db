//! HMAC-SHA256, the one signature stasis tokens use, as jsonwebtoken's
//! crypto provider.
//!
//! jsonwebtoken parses and builds the JWT and leaves the cryptography to a
//! provider. Its bundled RustCrypto provider carries RSA, ECDSA and EdDSA
//! too, which made the edge worker's wasm 35% larger (1.55 to 2.09 MB) for
//! code stasis never runs; this one signs and verifies HS256 only, with the
//! `hmac` and `sha2` crates, and compares signatures in constant time
//! (`Mac::verify_slice`).

use hmac::{Hmac, Mac};
use jsonwebtoken::{
    Algorithm, DecodingKey, EncodingKey,
    crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils},
    errors::{ErrorKind, Result},
    signature::{self, Signer, Verifier},
};
use sha2::Sha256;
use std::sync::Once;

/// A keyed HMAC-SHA256, cloned for each message.
struct Hs256(Hmac<Sha256>);

impl Hs256 {
    fn keyed(algorithm: &Algorithm, secret: &[u8]) -> Result<Self> {
        if *algorithm != Algorithm::HS256 {
            return Err(ErrorKind::InvalidAlgorithm.into());
        }
        Hmac::<Sha256>::new_from_slice(secret)
            .map(Self)
            .map_err(|_| ErrorKind::InvalidKeyFormat.into())
    }
}

impl Signer<Vec<u8>> for Hs256 {
    fn try_sign(&self, message: &[u8]) -> std::result::Result<Vec<u8>, signature::Error> {
        let mut mac = self.0.clone();
        mac.update(message);
        Ok(mac.finalize().into_bytes().to_vec())
    }
}

impl JwtSigner for Hs256 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::HS256
    }
}

impl Verifier<Vec<u8>> for Hs256 {
    fn verify(
        &self,
        message: &[u8],
        signature: &Vec<u8>,
    ) -> std::result::Result<(), signature::Error> {
        let mut mac = self.0.clone();
        mac.update(message);
        mac.verify_slice(signature)
            .map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for Hs256 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::HS256
    }
}

fn signer(algorithm: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    Ok(Box::new(Hs256::keyed(algorithm, key.as_bytes())?))
}

fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    Ok(Box::new(Hs256::keyed(algorithm, key.try_get_as_bytes()?)?))
}

static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: signer,
    verifier_factory: verifier,
    key_utils: KeyUtils::new_unimplemented(),
};

/// Makes HS256 jsonwebtoken's provider, once per process; call before any
/// encode or decode. Should another provider have been installed first,
/// it is kept (stasis installs none other).
pub(super) fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let _ = PROVIDER.install_default();
    });
}
