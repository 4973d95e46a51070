declare module 'asl-validator' {
  function aslValidator(definition: unknown): {
    isValid: boolean;
    errors: { message?: string }[];
    errorsText: (separator?: string) => string;
  };
  export = aslValidator;
}
