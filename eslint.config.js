import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'src/proto/', 'bench/results/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Runtimes log through the injected pino logger; only the CLI edge writes to the console.
      'no-console': 'error',
    },
  },
  {
    files: ['src/cli/**', 'bin/**', 'test/**', 'bench/**', 'tools/**', 'scripts/**'],
    rules: { 'no-console': 'off' },
  },
  // Boundaries (docs/architecture.md): the runtimes share only src/shared and the generated protocol; they never
  // import the compiler or cdk8s, and the compiler never imports a runtime.
  {
    files: ['src/agent/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: ['**/compiler/**', '**/cdk8s/**', 'cdk8s', 'cdk8s-plus-28', '**/plugin-server/**'] },
      ],
    },
  },
  {
    files: ['src/plugin-server/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: ['**/compiler/**', '**/cdk8s/**', 'cdk8s', 'cdk8s-plus-28', '**/agent/**'] },
      ],
    },
  },
  {
    files: ['src/compiler/**', 'cdk8s/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['**/agent/**', '**/plugin-server/**'] }] },
  },
);
