!> structure_replay: the structure-alone check. Drives rbcosim's own flexible body (module
!> body_endpoint: the library rbcosim_flex on a body file) with the rigid motions
!> record_motions.py recorded and writes the same rows as its REFERENCE file (see there), so
!> that the two can be compared number by number.
!>
!>   structure_replay BODY_FILE MOTIONS OUT
!>
!> BODY_FILE: `rbcosim export-body SCENARIO --body structure -o BODY_FILE`, with the overrides
!> the motions were recorded with (it carries the grounded reference and the micro steps).
program structure_replay
  use, intrinsic :: iso_c_binding, only: c_ptr, c_double, c_int, c_associated
  use, intrinsic :: iso_fortran_env, only: error_unit
  use body_endpoint
  implicit none
  integer, parameter :: dp = c_double
  character(len=4096) :: body_path, motions_path, out_path
  character(len=64) :: scheme
  character(len=:), allocatable :: message
  type(c_ptr) :: ep
  integer :: extrapolation, micro_steps, n_steps, added_mass, inp, out, k, ios, rows, id, handed
  real(dp) :: h, t0, m0(19), rec(40), kin(13), energy, mass(36), coeff(6, 4)

  if (command_argument_count() /= 3) error stop "usage: structure_replay BODY_FILE MOTIONS OUT"
  call get_command_argument(1, body_path)
  call get_command_argument(2, motions_path)
  call get_command_argument(3, out_path)
  open (newunit=inp, file=trim(motions_path), status="old", action="read")
  read (inp, *) scheme, extrapolation, micro_steps, h, n_steps, added_mass
  id = bef_scheme_of(trim(scheme))
  if (id < 0) then
    write (error_unit, "(a)") "structure_replay: scheme " // trim(scheme) // " is not run here"
    error stop 1
  end if
  ep = bef_open(trim(body_path), id, extrapolation, h, micro_steps, message)
  if (.not. c_associated(ep)) then
    write (error_unit, "(a)") message
    error stop 1
  end if
  read (inp, *) t0, m0
  ! added_mass: the coupling asks for a handover (made when the body has an added mass)
  handed = be_start(ep, t0, m0, int(added_mass, c_int), mass)
  open (newunit=out, file=trim(out_path), status="replace", action="write")
  call be_report(ep, kin, energy)
  rows = be_polynomial(ep, t0, coeff)
  call write_row(kin, energy, coeff(:, 1:rows))
  do k = 1, n_steps
    read (inp, *, iostat=ios) rec
    if (ios /= 0) error stop "structure_replay: truncated motions file"
    call be_report(ep, kin, energy)
    rows = be_inputs(ep, rec(1), rec(2:20), coeff)
    if (rows < 0) error stop "structure_replay: non-finite state"
    call write_row(kin, energy, coeff(:, 1:rows))
    if (be_finish(ep, rec(1), rec(2:20), rec(21), rec(22:40)) /= 0) &
      error stop "structure_replay: non-finite state"
  end do
  call be_report(ep, kin, energy)
  write (out, "(*(1x, es25.17e3))") kin, energy
  close (out)
  close (inp)
  call be_close(ep)

contains

  subroutine write_row(kin, energy, poly)
    real(dp), intent(in) :: kin(13), energy, poly(:, :)
    real(dp) :: padded(6, 3)
    padded = 0.0_dp
    padded(:, 1:size(poly, 2)) = poly
    write (out, "(*(1x, es25.17e3))") kin, energy, real(size(poly, 2), dp), padded
  end subroutine write_row

end program structure_replay
