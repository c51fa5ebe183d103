// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// Test-only smart wallet: EIP-1271 says a signature is valid when its owner key signed the digest.
/// Used to prove USDG's bytes-signature paths accept contract signers.
contract ERC1271Wallet {
    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 65) return 0xffffffff;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        return ecrecover(digest, v, r, s) == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}
