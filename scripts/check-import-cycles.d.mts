export const SRC_ROOT: string;
export const ALLOWED_CYCLES: string[][];
export function sourceFiles(root?: string, dir?: string): string[];
export function relativeSpecifiers(text: string): string[];
export function resolveSpecifier(from: string, spec: string): string;
export function importGraph(root?: string): Map<string, string[]>;
export function cycles(graph: Map<string, string[]>): string[][];
export function describeCycle(graph: Map<string, string[]>, component: string[]): string;
export function importCycleProblems(root?: string, allowed?: string[][]): string[];
