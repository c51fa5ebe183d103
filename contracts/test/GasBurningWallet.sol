// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// Test-only attacker: a contract payer whose EIP-1271 check burns `burn` gas before saying yes to any
/// signature. USDG calls it with all the gas the settlement transaction forwards, so without a ceiling the
/// payer decides how much of the relayer's gas one settle costs (test/adversarial/gas-burner.test.ts).
contract GasBurningWallet {
    uint256 public immutable burn;

    constructor(uint256 burn_) {
        burn = burn_;
    }

    function isValidSignature(bytes32, bytes calldata) external view returns (bytes4) {
        uint256 start = gasleft();
        while (start - gasleft() < burn) {}
        return 0x1626ba7e;
    }
}
