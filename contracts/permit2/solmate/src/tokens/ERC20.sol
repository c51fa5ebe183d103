// SPDX-License-Identifier: MIT
pragma solidity ^0.8.17;

// Tollgate's stand-in for solmate's src/tokens/ERC20.sol, which Uniswap/permit2 imports (lib/solmate at
// 8d910d876f51c3b2585c9109409d601f600e68e1). That file is AGPL-3.0-only, so it is not vendored into this MIT
// repository: Permit2 uses ERC20 only as the type of the token it pulls from (ERC20(token).safeTransferFrom),
// and this interface is all that type needs. scripts/compile-contracts.mjs serves it under solmate's import path.
interface ERC20 {
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}
